import { chmodSync, chownSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { Refusal } from '../../domain/refusal.js';
import { readOrUndefined, writeFileAtomic } from '../atomic-write.js';
import { applied, held, refused, type Outcome } from '../outcome.js';
import { sha256 } from '../resource-identity.js';
import { resolveOwner } from '../system-users.js';
import { newRecordId, type Applying, type Driver, type DriverContext } from './driver.js';

// A secret's value never travels in a declaration (ADR 0113): at apply time the agent asks the
// vault for it over its own connection, signed with its host key, opens the answer with the key
// it enrolled with, and writes it to the declared path, mode 0600, owned by the user the module
// runs as — never into an environment (a manifest reads it from the file, or names it as an
// env-file with its reason). The vault away or not yet told: held, saying so, and asked again at
// the next pass. Undeclared: the file goes.

/** The vault's answer for one secret: a Refusal when it says no, any other error when nobody answered. */
export type FetchSecret = (secret: string) => Promise<{ version: number; value: string }>;

const FILE_MODE = 0o600;


export const secretDriver = (context: DriverContext, fetch: FetchSecret): Driver<'secret'> => ({
  async apply({ resource, record, identity, digest }: Applying<'secret'>): Promise<Outcome> {
    const owner = resource.owner === null ? null : resolveOwner(resource.owner);
    if (owner && !owner.ok) return refused(owner.reason);
    // Fetched once per declaration of it: the file as the agent wrote it for this one is kept.
    const actual = readOrUndefined(resource.path);
    let { written, version } = record?.digest === digest && actual && record.written && sha256(actual) === record.written ? record : { written: undefined, version: undefined };
    if (!written) {
      let delivered: { version: number; value: string };
      try {
        delivered = await fetch(resource.secret);
      } catch (error) {
        const why = error instanceof Refusal ? error.problems.map((p) => `${p.what}: ${p.why}`).join('; ') : (error as Error).message;
        return held(`waiting for the vault to deliver ${resource.secret}: ${why}`);
      }
      // Folders others may pass through but not list, so a module running as its own user reaches its file.
      mkdirSync(dirname(resource.path), { recursive: true, mode: 0o711 });
      writeFileAtomic(resource.path, delivered.value, FILE_MODE);
      written = sha256(Buffer.from(delivered.value));
      version = delivered.version;
      context.logger.info({ key: resource.key, secret: resource.secret, version, path: resource.path }, 'wrote a secret the vault delivered');
    }
    const now = statSync(resource.path);
    if ((now.mode & 0o7777) !== FILE_MODE) chmodSync(resource.path, FILE_MODE);
    if (owner?.ok && (now.uid !== owner.value.uid || now.gid !== owner.value.gid)) chownSync(resource.path, owner.value.uid, owner.value.gid);
    context.records.put({ id: record?.id ?? newRecordId(), kind: 'secret', key: resource.key, module: resource.module, identity, digest, path: resource.path, written, ...(version ? { version } : {}) });
    return applied;
  },

  async undeclare(record) {
    rmSync(record.path, { force: true });
    context.records.delete(record.id);
    context.logger.info({ key: record.key, path: record.path }, "removed an undeclared module's secret");
  },
});
