// The fold's code version: a digest of the source of the code that folds the log, so a snapshot
// of a fold (docs/decisions.md, "Snapshots of the fold") is only ever read by the code that wrote
// it. That code is what the mesh's state and the event registry import, followed file by file:
// the composition, every slice's state and evolve, the events' schemas and upcasters that shape
// what a fold is given, and whatever those import. A change anywhere else (a decider alone, the
// bus user list, a projection) leaves every snapshot readable.
//
// Run from source (the tests, tsx) it is computed from the files; the bundle scripts/build-cli.js builds
// has no source beside it, so the digest is computed when the bundle is built and written into it
// (esbuild `define`). Both go through this one function.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

/** Where the fold starts, relative to the project's root: the state it folds into, and how an event is read. */
export const FOLD_ROOTS = ['src/domain/mesh/state.ts', 'src/domain/registry.ts'];

/** The identifier the bundle defines as the digest. */
export const FOLD_VERSION_DEFINE = 'MESH_FOLD_VERSION';

const IMPORT = /(?:^|\n)\s*(?:import|export)\b[^;'"]*?['"](\.{1,2}\/[^'"]+)['"]/g;

/** Every source file the fold's roots import, directly or not (relative imports; `.js` in an import is the `.ts` beside it), in path order. */
export const foldSourceFiles = (root) => {
  const found = new Set();
  const visit = (path) => {
    if (found.has(path)) return;
    found.add(path);
    const text = readFileSync(join(root, path), 'utf8');
    for (const match of text.matchAll(IMPORT)) {
      const target = join(dirname(path), match[1]);
      const source = target.replace(/\.js$/, '.ts');
      const file = existsSync(join(root, source)) ? source : target;
      if (/\.[cm]?[jt]s$/.test(file) && existsSync(join(root, file))) visit(relative(root, join(root, file)).split('\\').join('/'));
    }
  };
  for (const start of FOLD_ROOTS) visit(start);
  return [...found].sort();
};

/** sha256 (hex) over each of those files' path and the sha256 of its content. */
export const foldCodeVersionOf = (root) => {
  const digest = createHash('sha256').update('mesh.fold-version/1\n');
  for (const path of foldSourceFiles(root)) digest.update(`${path}\n${createHash('sha256').update(readFileSync(join(root, path))).digest('hex')}\n`);
  return digest.digest('hex');
};

/** What scripts/build-cli.js gives esbuild's `define`: the digest, as the string literal it replaces the identifier with. */
export const foldVersionDefine = (root) => ({ [FOLD_VERSION_DEFINE]: JSON.stringify(foldCodeVersionOf(root)) });
