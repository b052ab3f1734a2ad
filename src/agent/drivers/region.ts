import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { applied, held, refused, type Outcome } from '../outcome.js';
import { bytesAsText, regionBlock, removeRegion, textAsBytes, writeRegion } from '../region-text.js';
import { pathGuard } from '../path-guard.js';
import { newRecordId, type Applying, type Driver, type DriverContext } from './driver.js';

// A region of a file the machine shares (ADR 0102): the agent writes only between its markers and
// keeps the rest byte for byte. The file is the machine's: the agent never creates it (a region
// waits for it) and writes it in place, so its inode, owner and mode stay — other software holds
// it open, watches it or bind-mounts it. What a region with the same markers held before the
// first apply is kept in the record and put back on undeclare; otherwise the region is removed
// and nothing else (ADR 0118, R118.1).

export const regionDriver = (context: DriverContext): Driver<'region'> => {
  // The shared file, and where it lands through any link on the way, is checked before it is read or written.
  const guard = pathGuard(context.folder.dir);
  return {
    async apply({ resource, record, identity, digest }: Applying<'region'>): Promise<Outcome> {
      const checked = guard.check(resource.path, 'region');
      if (!checked.ok) return refused(`${checked.why}: a region is written into a file the machine shares with other software, never into one of its own`);
      if (!existsSync(resource.path)) return held(`waiting for ${resource.path}: a shared file is the machine's, and the mesh writes into it, never creates it`);
      if (!statSync(resource.path).isFile()) return refused(`${resource.path} exists and is not a file`);
      const marker = record?.marker ?? resource.key;
      const text = bytesAsText(readFileSync(resource.path));
      const edit = writeRegion(text, marker, regionBlock(marker, resource.content), resource.at);
      if (!edit.ok) return refused(`the region of ${resource.path} cannot be told apart: ${edit.reason}`);
      if (edit.text !== text) writeFileSync(resource.path, textAsBytes(edit.text));
      // The region found before the first apply is what undeclaring puts back; never overwritten later.
      const before = record ? record.before : edit.found;
      context.records.put({ id: record?.id ?? newRecordId(), kind: 'region', key: resource.key, module: resource.module, identity, digest, path: resource.path, marker, before });
      return applied;
    },

    async undeclare(record) {
      const checked = guard.check(record.path, 'region');
      if (!checked.ok) context.logger.warn({ path: record.path, why: checked.why }, 'undeclared region left alone: its file is no longer one the mesh writes into');
      else if (existsSync(record.path)) {
        const text = bytesAsText(readFileSync(record.path));
        const edit = removeRegion(text, record.marker, record.before);
        if (!edit.ok) throw new Error(`the region of ${record.path} cannot be told apart: ${edit.reason}`);
        if (edit.text !== text) writeFileSync(record.path, textAsBytes(edit.text));
      }
      context.records.delete(record.id);
    },
  };
};
