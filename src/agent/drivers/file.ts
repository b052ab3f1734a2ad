import { copyFileSync, existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { writeFileAtomic } from '../atomic-write.js';
import { applied, held, refused, type Outcome } from '../outcome.js';
import { sha256 } from '../resource-identity.js';
import { newRecordId, type Applying, type Driver, type DriverContext } from './driver.js';

// A file is written whole and renamed into place with its mode. A file that was already there
// when first declared is kept aside (found/<record>) and put back when undeclared (ADR 0118); one
// the agent created is removed — unless someone has changed it since, which the agent leaves.

const readOrUndefined = (path: string): Buffer | undefined => {
  try {
    return readFileSync(path);
  } catch {
    return undefined;
  }
};

export const fileDriver = (context: DriverContext): Driver<'file'> => ({
  async apply({ resource, record, identity, digest }: Applying<'file'>): Promise<Outcome> {
    if (!existsSync(dirname(resource.path))) return held(`waiting for its directory ${dirname(resource.path)}`);
    if (existsSync(resource.path) && !statSync(resource.path).isFile()) return refused(`${resource.path} exists and is not a file`);
    const id = record?.id ?? newRecordId();
    let found = record?.found ?? false;
    if (!record && existsSync(resource.path)) {
      copyFileSync(resource.path, context.folder.foundCopy(id));
      found = true;
    }
    const wanted = Buffer.from(resource.content);
    const mode = Number.parseInt(resource.mode, 8);
    const actual = readOrUndefined(resource.path);
    if (!actual?.equals(wanted) || (statSync(resource.path).mode & 0o7777) !== mode) writeFileAtomic(resource.path, wanted, mode);
    context.records.put({ id, kind: 'file', key: resource.key, module: resource.module, identity, digest, path: resource.path, written: sha256(wanted), found });
    return applied;
  },

  async undeclare(record) {
    const actual = readOrUndefined(record.path);
    if (actual && sha256(actual) === record.written) {
      const original = context.folder.foundCopy(record.id);
      if (record.found && existsSync(original)) writeFileAtomic(record.path, readFileSync(original), statSync(original).mode & 0o7777);
      else rmSync(record.path, { force: true });
    } else if (actual) {
      context.logger.info({ path: record.path }, 'undeclared file kept: it was changed after the agent wrote it');
    }
    rmSync(context.folder.foundCopy(record.id), { force: true });
    context.records.delete(record.id);
  },
});
