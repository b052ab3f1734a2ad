import { copyFileSync, existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { pathGuard } from '../path-guard.js';
import { readOrUndefined, writeFileAtomic } from '../atomic-write.js';
import { credentialTag, inUsePath, readTagLines } from '../../domain/secrets/credential-tag.js';
import { applied, held, refused, type Outcome } from '../outcome.js';
import { sha256 } from '../resource-identity.js';
import { moduleWordWaits, newRecordId, type Applying, type Driver, type DriverContext } from './driver.js';

// A file is written whole and renamed into place with its mode. A file that was already there
// when first declared is kept aside (found/<record>) and put back when undeclared (ADR 0118); one
// the agent created is removed — unless someone has changed it since, which the agent leaves.
// A template that reads a secret (`${db.password}`) reaches the agent as `${secret:NAME}`: it is
// filled here, on the node, from the file the vault's value was placed in (ADR 0113), so the value
// never travels in a declaration; such a file is for its owner's eyes only.

/** `${secret:NAME}`: a secret the composer named where a template read it. */
const SECRET_MARKER = /\$\{secret:([^}]+)\}/g;
/** `${secret-tag:NAME}`: which value of that secret the node holds (its tag), where a provider answered with `${consumer.secret-tag}`. */
const SECRET_TAG_MARKER = /\$\{secret-tag:([^}]+)\}/g;

export const readsSecretMarker = (content: string): boolean => content.includes('${secret:') || content.includes('${secret-tag:');

export interface FileDriver extends Driver<'file'> {
  /**
   * `secretFiles`: where each secret declared to the module is placed, by name; `place`: the
   * module's directory it is written into (default: its own folder), which it must not leave.
   */
  apply(applying: Applying<'file'>, secretFiles?: ReadonlyMap<string, string>, place?: string): Promise<Outcome>;
}

/** The content with each secret it names filled in, or why it cannot be yet. */
const filled = (content: string, mode: number, secretFiles: ReadonlyMap<string, string>): { ok: true; content: Buffer } | { ok: false; outcome: Outcome } => {
  const names = [...content.matchAll(SECRET_MARKER)].map((m) => m[1] ?? '');
  const tagged = [...content.matchAll(SECRET_TAG_MARKER)].map((m) => m[1] ?? '');
  if (names.length === 0 && tagged.length === 0) return { ok: true, content: Buffer.from(content) };
  if (names.length > 0 && (mode & 0o077) !== 0) return { ok: false, outcome: refused(`it holds the secret ${names[0]}, and its mode ${mode.toString(8).padStart(4, '0')} lets others read it: give it mode 0600`) };
  const values = new Map<string, string>();
  for (const name of new Set([...names, ...tagged])) {
    const path = secretFiles.get(name);
    if (!path) return { ok: false, outcome: refused(`it reads the secret ${name}, which is not declared to its module on this node`) };
    const value = readOrUndefined(path);
    if (value === undefined) return { ok: false, outcome: held(`waiting for the vault to deliver ${name}`) };
    values.set(name, value.toString('utf8'));
  }
  const withTags = content.replace(SECRET_TAG_MARKER, (_, name: string) => credentialTag(values.get(name) ?? ''));
  return { ok: true, content: Buffer.from(withTags.replace(SECRET_MARKER, (_, name: string) => values.get(name) ?? '')) };
};

export const fileDriver = (context: DriverContext): FileDriver => {
  const waits = moduleWordWaits(context);
  const guard = pathGuard(context.folder.dir);
  return {
    async apply({ resource, record, identity, digest }: Applying<'file'>, secretFiles: ReadonlyMap<string, string> = new Map(), place = dirname(resource.path)): Promise<Outcome> {
      // Before anything is read or written there: the path, and where it lands on this disk, stays in the module's place.
      const checked = guard.check(resource.path, 'place', place);
      if (!checked.ok) return refused(`${checked.why}: a file stays inside its module's place`);
      if (!existsSync(dirname(resource.path))) return held(`waiting for its directory ${dirname(resource.path)}`);
      if (existsSync(resource.path) && !statSync(resource.path).isFile()) return refused(`${resource.path} exists and is not a file`);
      const id = record?.id ?? newRecordId();
      let found = record?.found ?? false;
      if (!record && existsSync(resource.path)) {
        copyFileSync(resource.path, context.folder.foundCopy(id));
        found = true;
      }
      const mode = Number.parseInt(resource.mode, 8);
      const content = filled(resource.content, mode, secretFiles);
      if (!content.ok) return content.outcome;
      const wanted = content.content;
      const actual = readOrUndefined(resource.path);
      if (!actual?.equals(wanted) || (statSync(resource.path).mode & 0o7777) !== mode) writeFileAtomic(resource.path, wanted, mode);
      context.records.put({ id, kind: 'file', key: resource.key, module: resource.module, identity, digest, path: resource.path, written: sha256(wanted), found });
      if (resource.awaitsUse && !readTagLines(readOrUndefined(inUsePath(resource.path))?.toString('utf8') ?? '').has(credentialTag(wanted.toString('utf8')))) {
        waits.lookAgain(resource.key, 'to be in use');
        return held(`written; waiting for ${resource.module} to say it works with it (${inUsePath(resource.path)})`);
      }
      waits.settled(resource.key);
      return applied;
    },

    async undeclare(record) {
      const checked = guard.check(record.path, 'place', dirname(record.path));
      const actual = checked.ok ? readOrUndefined(record.path) : undefined;
      if (!checked.ok) context.logger.warn({ path: record.path, why: checked.why }, 'undeclared file left alone: its path no longer stays in its place');
      if (actual && sha256(actual) === record.written) {
        const original = context.folder.foundCopy(record.id);
        if (record.found && existsSync(original)) writeFileAtomic(record.path, readFileSync(original), statSync(original).mode & 0o7777);
        else rmSync(record.path, { force: true });
      } else if (actual) {
        context.logger.info({ path: record.path }, 'undeclared file kept: it was changed after the agent wrote it');
      }
      rmSync(context.folder.foundCopy(record.id), { force: true });
      rmSync(inUsePath(record.path), { force: true });
      context.records.delete(record.id);
    },
  };
};
