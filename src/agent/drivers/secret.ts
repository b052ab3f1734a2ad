import { chmodSync, chownSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { Refusal } from '../../domain/refusal.js';
import { credentialTag, inForcePath, readTagLines } from '../../domain/secrets/credential-tag.js';
import { readOrUndefined, writeFileAtomic } from '../atomic-write.js';
import { applied, held, refused, type Outcome } from '../outcome.js';
import { sha256 } from '../resource-identity.js';
import { resolveOwner } from '../system-users.js';
import { moduleWordWaits, newRecordId, type Applying, type Driver, type DriverContext } from './driver.js';

// A secret's value never travels in a declaration (ADR 0113): at apply time the agent asks the
// vault for it over its own connection, signed with its host key, opens the answer with the key
// it enrolled with, and writes it to the declared path, mode 0600, owned by the user the module
// runs as — never into an environment (a manifest reads it from the file, or names it as an
// env-file with its reason). The vault away or not yet told: held, saying so, and asked again at
// the next pass. Undeclared: the file goes.
//
// During a rotation the declaration names the versions to place: the first at the path, a second
// at `<path>.next`, so the module that applies the secret holds both credentials at once
// (docs/decisions.md, "Rotating a secret"). A `.next` no longer declared is removed.
//
// A provider that says what it holds in force (`awaitsInForce`: its manifest's
// `confirmsCredentials`) has its copy applied only once it names every value placed in
// `<path>.in-force`: until then the resource is held, and looked at again shortly. That is what
// makes a rotation's "applied" mean the new login authenticates, not merely that its file is there.

/** The vault's answer for one secret (a version of it, when named): a Refusal when it says no, any other error when nobody answered. */
export type FetchSecret = (secret: string, version?: number) => Promise<{ version: number; value: string }>;

const FILE_MODE = 0o600;

export const nextPath = (path: string): string => `${path}.next`;

export const secretDriver = (context: DriverContext, fetch: FetchSecret): Driver<'secret'> => {
  const waits = moduleWordWaits(context);
  /** The placed values its module has not said it holds in force, as `version N` or `the current value`. */
  const notInForce = (path: string, placed: { path: string; version: number | undefined }[]): string[] => {
    const said = readTagLines(readOrUndefined(inForcePath(path))?.toString('utf8') ?? '');
    return placed.flatMap(({ path: at, version }) => {
      const value = readOrUndefined(at);
      return value !== undefined && said.has(credentialTag(value.toString('utf8'))) ? [] : [version === undefined ? 'the current value' : `version ${version}`];
    });
  };
  const keepMode = (path: string, owner: { uid: number; gid: number } | undefined): void => {
    const now = statSync(path);
    if ((now.mode & 0o7777) !== FILE_MODE) chmodSync(path, FILE_MODE);
    if (owner && (now.uid !== owner.uid || now.gid !== owner.gid)) chownSync(path, owner.uid, owner.gid);
  };

  return {
    async apply({ resource, record, identity, digest }: Applying<'secret'>): Promise<Outcome> {
      const owner = resource.owner === null ? null : resolveOwner(resource.owner);
      if (owner && !owner.ok) return refused(owner.reason);
      const [first, second] = resource.versions ?? [];
      // Fetched once per declaration of it: the files as the agent wrote them for this one are kept.
      const same = record?.digest === digest;
      const kept = (path: string, sha: string | undefined): boolean => {
        const actual = readOrUndefined(path);
        return same && actual !== undefined && sha !== undefined && sha256(actual) === sha;
      };
      let written = kept(resource.path, record?.written) ? record?.written : undefined;
      let version = written ? record?.version : undefined;
      let nextWritten = second !== undefined && kept(nextPath(resource.path), record?.nextWritten) ? record?.nextWritten : undefined;
      const place = async (path: string, wanted: number | undefined): Promise<{ sha: string; version: number } | string> => {
        let delivered: { version: number; value: string };
        try {
          delivered = await fetch(resource.secret, wanted);
        } catch (error) {
          const why = error instanceof Refusal ? error.problems.map((p) => `${p.what}: ${p.why}`).join('; ') : (error as Error).message;
          return `waiting for the vault to deliver ${resource.secret}${wanted === undefined ? '' : ` version ${wanted}`}: ${why}`;
        }
        // Folders others may pass through but not list, so a module running as its own user reaches its file.
        mkdirSync(dirname(path), { recursive: true, mode: 0o711 });
        writeFileAtomic(path, delivered.value, FILE_MODE);
        context.logger.info({ key: resource.key, secret: resource.secret, version: delivered.version, path }, 'wrote a secret the vault delivered');
        return { sha: sha256(Buffer.from(delivered.value)), version: delivered.version };
      };
      if (!written) {
        const placed = await place(resource.path, first);
        if (typeof placed === 'string') return held(placed);
        written = placed.sha;
        version = placed.version;
      }
      if (second !== undefined && !nextWritten) {
        const placed = await place(nextPath(resource.path), second);
        if (typeof placed === 'string') return held(placed);
        nextWritten = placed.sha;
      }
      if (second === undefined) rmSync(nextPath(resource.path), { force: true });
      const ids = owner?.ok ? owner.value : undefined;
      keepMode(resource.path, ids);
      if (second !== undefined) keepMode(nextPath(resource.path), ids);
      context.records.put({ id: record?.id ?? newRecordId(), kind: 'secret', key: resource.key, module: resource.module, identity, digest, path: resource.path, written, ...(version ? { version } : {}), ...(nextWritten && second !== undefined ? { nextWritten } : {}) });
      if (resource.awaitsInForce) {
        const waiting = notInForce(resource.path, [{ path: resource.path, version: first ?? version }, ...(second !== undefined ? [{ path: nextPath(resource.path), version: second }] : [])]);
        if (waiting.length > 0) {
          waits.lookAgain(resource.key, 'to be put in force');
          return held(`placed; waiting for ${resource.module} to put ${waiting.join(' and ')} of ${resource.secret} in force`);
        }
        waits.settled(resource.key);
      }
      return applied;
    },

    async undeclare(record) {
      rmSync(record.path, { force: true });
      rmSync(nextPath(record.path), { force: true });
      context.records.delete(record.id);
      context.logger.info({ key: record.key, path: record.path }, "removed an undeclared module's secret");
    },
  };
};
