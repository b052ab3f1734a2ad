// The fold's code version: a digest of the source of the code that folds the log, so a snapshot
// of a fold (docs/decisions.md, "Snapshots of the fold") is only ever read by the code that wrote
// it. That code is src/domain without its tests: the slices' state and evolve, the events'
// schemas and upcasters that shape what a fold is given. The domain imports nothing outside it.
//
// Run from source (the tests, tsx) it is computed from the files; the bundle `bin/mesh.js` builds
// has no source beside it, so the digest is computed when the bundle is built and written into it
// (esbuild `define`). Both go through this one function.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The folder whose sources are the fold's code, relative to the project's root. */
export const FOLD_SOURCE_DIR = 'src/domain';

/** The identifier the bundle defines as the digest. */
export const FOLD_VERSION_DEFINE = 'MESH_FOLD_VERSION';

/** sha256 (hex) over each source file's path (from the project's root) and the sha256 of its content, in path order. */
export const foldCodeVersionOf = (root) => {
  const files = [];
  const walk = (relative) => {
    for (const entry of readdirSync(join(root, relative), { withFileTypes: true })) {
      const path = `${relative}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) files.push(path);
    }
  };
  walk(FOLD_SOURCE_DIR);
  const digest = createHash('sha256').update('mesh.fold-version/1\n');
  for (const path of files.sort()) digest.update(`${path}\n${createHash('sha256').update(readFileSync(join(root, path))).digest('hex')}\n`);
  return digest.digest('hex');
};

/** What `bin/mesh.js` gives esbuild's `define`: the digest, as the string literal it replaces the identifier with. */
export const foldVersionDefine = (root) => ({ [FOLD_VERSION_DEFINE]: JSON.stringify(foldCodeVersionOf(root)) });
