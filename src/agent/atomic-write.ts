import { closeSync, fsyncSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/**
 * Writes beside the target and renames over it, so a reader (or an agent killed half-way) sees
 * the old content or the new, never a part. The mode is set before the rename, so the file never
 * exists at its path with a wider mode than declared.
 */
export const writeFileAtomic = (path: string, content: string | Buffer, mode = 0o644): void => {
  const partial = join(dirname(path), `.${basename(path)}.${process.pid}.partial`);
  const fd = openSync(partial, 'w', mode);
  try {
    writeSync(fd, typeof content === 'string' ? Buffer.from(content) : content);
    fsyncSync(fd);
  } catch (error) {
    closeSync(fd);
    rmSync(partial, { force: true });
    throw error;
  }
  closeSync(fd);
  try {
    renameSync(partial, path);
  } catch (error) {
    rmSync(partial, { force: true });
    throw error;
  }
};

/** A file's bytes, or undefined when it cannot be read (not there): what the agent compares with what it wrote. */
export const readOrUndefined = (path: string): Buffer | undefined => {
  try {
    return readFileSync(path);
  } catch {
    return undefined;
  }
};

/** Writes `content` as `writeFileAtomic` does, unless the file already says exactly that: a word said again every pass costs no write. */
export const writeFileIfChanged = (path: string, content: string, mode = 0o644): void => {
  if (readOrUndefined(path)?.toString('utf8') !== content) writeFileAtomic(path, content, mode);
};
