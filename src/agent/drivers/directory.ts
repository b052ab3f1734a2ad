import { chmodSync, chownSync, mkdirSync, rmdirSync, statSync } from 'node:fs';
import { applied, refused, type Outcome } from '../outcome.js';
import { resolveOwner } from '../system-users.js';
import { newRecordId, type Applying, type Driver, type DriverContext } from './driver.js';

// A directory is created with its owner and mode, and its data outlives the declaration: undeclaring
// removes only an empty directory the agent created itself (rmdir refuses a non-empty one, so
// nothing is ever deleted recursively).

export const directoryDriver = (context: DriverContext): Driver<'directory'> => ({
  async apply({ resource, record, identity, digest }: Applying<'directory'>): Promise<Outcome> {
    const owner = resource.owner === null ? null : resolveOwner(resource.owner);
    if (owner && !owner.ok) return refused(owner.reason);
    const existing = statOrUndefined(resource.path);
    if (existing && !existing.isDirectory()) return refused(`${resource.path} exists and is not a directory`);
    const found = record ? record.found : existing !== undefined;
    if (!existing) mkdirSync(resource.path, { recursive: true });
    const mode = Number.parseInt(resource.mode, 8);
    const now = statSync(resource.path);
    if ((now.mode & 0o7777) !== mode) chmodSync(resource.path, mode);
    if (owner?.ok && (now.uid !== owner.value.uid || now.gid !== owner.value.gid)) chownSync(resource.path, owner.value.uid, owner.value.gid);
    context.records.put({ id: record?.id ?? newRecordId(), kind: 'directory', key: resource.key, module: resource.module, identity, digest, path: resource.path, found });
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
    }
    context.records.delete(record.id);
  },
});

const statOrUndefined = (path: string) => {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
};
