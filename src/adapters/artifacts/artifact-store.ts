import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { lstat, mkdir, readFile, readdir, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { ObjectStore } from '@nats-io/obj';

// The mesh's artifact store: a NATS object store bucket holding each artifact under the digest
// of its content. The digest is of the tree, not of the archive's bytes — paths, kinds, the
// executable bit, file contents and link targets, nothing else — so a byte-identical output is
// the same artifact whenever and wherever it was built (the seeds' comment-only commit).

/** A deterministic digest of a directory tree. */
export const treeDigest = async (root: string): Promise<string> => {
  const lines: string[] = [];
  const walk = async (dir: string, prefix: string): Promise<void> => {
    const entries = (await readdir(dir)).sort();
    for (const name of entries) {
      const path = join(dir, name);
      const relative = prefix ? `${prefix}/${name}` : name;
      const stat = await lstat(path);
      if (stat.isSymbolicLink()) lines.push(`l ${relative} ${await readlink(path)}`);
      else if (stat.isDirectory()) {
        lines.push(`d ${relative}`);
        await walk(path, relative);
      } else if (stat.isFile()) {
        const executable = (stat.mode & 0o111) !== 0 ? 'x' : '-';
        lines.push(`f ${executable} ${relative} ${createHash('sha256').update(await readFile(path)).digest('hex')}`);
      }
    }
  };
  await walk(root, '');
  return `sha256:${createHash('sha256').update(lines.join('\n')).digest('hex')}`;
};

const run = (command: string, args: string[], input?: Uint8Array): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: [input ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    let err = '';
    child.stdout?.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve(Buffer.concat(out)) : reject(new Error(`${command} ${args.join(' ')} exited with ${code}: ${err.trim()}`))));
    if (input && child.stdin) {
      child.stdin.on('error', () => undefined); // a tar that exits early says why on stderr
      child.stdin.end(input);
    }
  });

/** A reproducible tar of the tree: names sorted, times and owners fixed. */
export const packTree = (root: string): Promise<Buffer> => run('tar', ['--sort=name', '--mtime=@0', '--owner=0', '--group=0', '--numeric-owner', '-C', root, '-cf', '-', '.']);

export const unpackTree = async (archive: Uint8Array, into: string): Promise<void> => {
  await mkdir(into, { recursive: true });
  await run('tar', ['-C', into, '-xf', '-'], archive);
};

/** Stores the tree under its digest, once: an artifact already there is not written again. */
export const storeArtifact = async (store: ObjectStore, root: string, description: string): Promise<string> => {
  const digest = await treeDigest(root);
  if (!(await store.info(digest))) await store.putBlob({ name: digest, description }, new Uint8Array(await packTree(root)));
  return digest;
};

/** Unpacks an artifact into `into`; false when the store does not hold it. */
export const fetchArtifact = async (store: ObjectStore, digest: string, into: string): Promise<boolean> => {
  const archive = await store.getBlob(digest);
  if (!archive) return false;
  await unpackTree(archive, into);
  return true;
};
