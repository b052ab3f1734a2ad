import { existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { writeFileAtomic } from '../atomic-write.js';
import { applied, held, refused, tail, type Outcome } from '../outcome.js';
import { sha256 } from '../resource-identity.js';
import { newRecordId, type Applying, type Driver, type DriverContext } from './driver.js';

// The mesh's root certificate, placed where the machine's TLS clients look, and the machine's
// bundles refreshed (issue 129 of the seeds: `update-ca-trust`, `update-ca-certificates`). Removal
// is symmetric: undeclared, the anchor goes and the bundles are refreshed again, so a machine
// leaving the private network stops trusting the mesh. A refresh that fails is tried again.

export interface TrustStore {
  /** the folder of anchors the refresh reads */
  dir: string;
  /** the command that rebuilds the machine's bundles from it, as its words; none: nothing to refresh */
  refresh: readonly string[];
}

/** Debian's: anchors in /usr/local/share/ca-certificates, refreshed by update-ca-certificates. */
export const trustStore = (env: NodeJS.ProcessEnv = process.env): TrustStore => ({
  dir: env.MESH_TRUST_DIR ?? '/usr/local/share/ca-certificates',
  refresh: env.MESH_TRUST_REFRESH === undefined ? ['update-ca-certificates'] : env.MESH_TRUST_REFRESH.trim().split(/\s+/).filter((w) => w !== ''),
});

/** One file per anchor, named for its module and name; `.crt`, which update-ca-certificates reads. */
export const anchorPath = (store: TrustStore, key: string): string => join(store.dir, `mesh-${key.replace('/', '-')}.crt`);

const refreshed = async (store: TrustStore): Promise<string | null> => {
  const [program, ...args] = store.refresh;
  if (!program) return null;
  const result = await execa(program, args, { reject: false, timeout: 120_000, stdin: 'ignore' });
  if (result.exitCode === 0) return null;
  if (result.exitCode === undefined) return `${program} could not run: ${result.code === 'ENOENT' ? 'it is not installed' : result.shortMessage}`;
  return `${store.refresh.join(' ')} exited with status ${result.exitCode}: ${tail(String(result.stderr || result.stdout), 300)}`;
};

export const trustAnchorDriver = (context: DriverContext, store: TrustStore): Driver<'trust-anchor'> => ({
  async apply({ resource, record, identity, digest }: Applying<'trust-anchor'>): Promise<Outcome> {
    if (!existsSync(store.dir) || !statSync(store.dir).isDirectory()) return held(`waiting for the machine's trust directory ${store.dir}`);
    const path = anchorPath(store, resource.key);
    const wanted = Buffer.from(resource.certificate);
    const actual = existsSync(path) ? readFileSync(path) : undefined;
    const changed = !actual?.equals(wanted);
    if (changed) writeFileAtomic(path, wanted, 0o644);
    const id = record?.id ?? newRecordId();
    // The bundles are rebuilt when the anchor changed, or when the last rebuild failed.
    const failure = changed || !(record?.refreshed ?? false) ? await refreshed(store) : null;
    context.records.put({ id, kind: 'trust-anchor', key: resource.key, module: resource.module, identity, digest, path, written: sha256(wanted), refreshed: failure === null });
    return failure ? refused(`placed ${path}, but the machine's trust was not refreshed: ${failure}`) : applied;
  },

  async undeclare(record) {
    rmSync(record.path, { force: true });
    const failure = await refreshed(store);
    if (failure) throw new Error(`removed ${record.path}, but the machine's trust was not refreshed: ${failure}`);
    context.records.delete(record.id);
  },
});
