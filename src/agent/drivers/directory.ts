import { chmodSync, chownSync, lstatSync, mkdirSync, rmdirSync, statSync } from 'node:fs';
import { applied, refused, type Outcome } from '../outcome.js';
import { pathGuard } from '../path-guard.js';
import { resolveOwner } from '../system-users.js';
import { newRecordId, type Applying, type Driver, type DriverContext } from './driver.js';

// A directory is created with its owner and mode, and its data outlives the declaration: undeclaring
// removes only an empty directory the agent created itself (rmdir refuses a non-empty one, so
// nothing is ever deleted recursively). A directory that was already there (a host folder an
// operator placed it on) is the machine's: its owner and mode are recorded before the agent first
// changes them, and given back when it is undeclared. Nothing is touched before the path, and
// where it lands on the disk, has passed the agent's own check (path-guard.ts).

export const directoryDriver = (context: DriverContext): Driver<'directory'> => {
  const guard = pathGuard(context.folder.dir);
  return {
    async apply({ resource, record, identity, digest }: Applying<'directory'>): Promise<Outcome> {
      const checked = guard.check(resource.path, 'place');
      if (!checked.ok) return refused(`${checked.why}: a module's directory is never one of the machine's own folders`);
      const path = checked.resolved;
      const owner = resource.owner === null ? null : resolveOwner(resource.owner);
      if (owner && !owner.ok) return refused(owner.reason);
      const existing = statOrUndefined(path);
      if (existing && !existing.isDirectory()) return refused(`${resource.path} exists and is not a directory`);
      const found = record ? record.found : existing !== undefined;
      // What the host folder was, kept before anything of it changes: given back on undeclare.
      const foundAs = record ? record.foundAs : existing ? { uid: existing.uid, gid: existing.gid, mode: existing.mode & 0o7777 } : undefined;
      const id = record?.id ?? newRecordId();
      context.records.put({ id, kind: 'directory', key: resource.key, module: resource.module, identity, digest, path: resource.path, found, ...(foundAs ? { foundAs } : {}) });
      if (!existing) mkdirSync(path, { recursive: true });
      const mode = Number.parseInt(resource.mode, 8);
      const now = statSync(path);
      // chown first: it clears set-id bits the mode may ask for
      if (owner?.ok && (now.uid !== owner.value.uid || now.gid !== owner.value.gid)) chownSync(path, owner.value.uid, owner.value.gid);
      if ((statSync(path).mode & 0o7777) !== mode) chmodSync(path, mode);
      return applied;
    },

    async undeclare(record) {
      if (!record.found) {
        try {
          rmdirSync(record.path);
        } catch (error) {
          const code = (error as NodeJS.ErrnoException).code;
          if (code !== 'ENOENT') context.logger.info({ path: record.path, code }, 'undeclared directory kept: it holds data');
        }
      } else if (record.foundAs) giveBack(record.path, record.foundAs, guard, context);
      context.records.delete(record.id);
    },
  };
};

/** A host folder as it was found: its owner and mode put back, unless it is no longer that folder (gone, or replaced by a link). */
const giveBack = (path: string, was: { uid: number; gid: number; mode: number }, guard: ReturnType<typeof pathGuard>, context: DriverContext): void => {
  const checked = guard.check(path, 'place');
  const now = checked.ok ? lstatOrUndefined(checked.resolved) : undefined;
  if (!checked.ok || !now?.isDirectory()) {
    context.logger.warn({ path, why: checked.ok ? 'it is no longer a directory' : checked.why }, 'undeclared host folder not given back its owner and mode');
    return;
  }
  if (now.uid !== was.uid || now.gid !== was.gid) chownSync(checked.resolved, was.uid, was.gid);
  if ((lstatSync(checked.resolved).mode & 0o7777) !== was.mode) chmodSync(checked.resolved, was.mode);
};

const statOrUndefined = (path: string) => {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
};

const lstatOrUndefined = (path: string) => {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
};
