// Builds the `mesh` command into dist/: the CLI's TypeScript sources and the npm packages they
// use, bundled by esbuild into ES modules split by verb. Run by npm's `prepare` (so `npm ci` in a
// checkout and `npm pack` build it), by `npm test` and the tests' global setup, and by `bin/mesh.js`
// in a checkout whose sources are newer than the build. An installed package never builds: it
// carries dist/ and no sources (docs/decisions.md, "One package, built once").
//
// dist/mesh.mjs is the entry: the verbs' definitions and commander, all that `mesh --help`,
// `--version` and completion load. Each verb's action imports its implementation
// (`lazy(() => import(...))`, src/cli/verbs.ts); esbuild gives each such import, and the code
// they share, a file of its own, named by a hash of its content.
//
// Plain JavaScript: it runs before anything is compiled. esbuild is imported only to build.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('../', import.meta.url));
export const distDir = (at = root) => join(at, 'dist');
/** What the build records of itself: the newest source it was built from, the version and the fold digest it carries, its files. */
export const buildRecordFile = (at = root) => join(distDir(at), 'build.json');
/** esbuild's account of the build (which sources and packages each output file holds); a checkout's, for the tests, not packed. */
export const metafileOf = (at = root) => join(distDir(at), 'meta.json');

/**
 * Packages loaded from node_modules as they are: those that find files of their own by
 * `__dirname` at load (pg-listen's pg-format), start worker threads from a file (pino's
 * transports), or are optional native parts; and the build tools, which a verb never loads.
 */
const UNBUNDLED = ['pg-native', 'pg-listen', 'pg-format', 'pino', 'thread-stream', 'pino-pretty', 'esbuild', 'playwright', 'playwright-core', '@playwright/test'];

/**
 * pg asks, as it loads, whether it runs in a Cloudflare Worker: on Node 20 (no `navigator`) by
 * making a `Response`, which loads node's whole fetch implementation (undici) — some 20 ms of every
 * verb that reads PostgreSQL, for an answer that is always no where the mesh runs. The bundle's pg
 * answers at once. If pg's file no longer has that function, the build says so and leaves it.
 */
const pgOnNode = {
  name: 'pg-on-node',
  setup(build) {
    build.onLoad({ filter: /[\\/]node_modules[\\/]pg[\\/]lib[\\/]stream\.js$/ }, (args) => {
      const source = readFileSync(args.path, 'utf8');
      const asked = 'function isCloudflareRuntime() {';
      if (!source.includes(asked)) return { contents: source, loader: 'js', warnings: [{ text: `${args.path} has no ${asked}: pg's Cloudflare check is bundled as it is` }] };
      return { contents: source.replace(asked, `${asked}\n  return false; // the mesh's bundle runs on Node (scripts/build-cli.js)`), loader: 'js' };
    });
  },
};

/**
 * zod's `z` carries every language's error messages (`z.locales`, half of zod's code), so every
 * verb that checks a value would parse them all. The mesh speaks English, zod's default: the
 * bundle's zod has that locale alone.
 */
const zodInEnglish = {
  name: 'zod-in-english',
  setup(build) {
    build.onLoad({ filter: /[\\/]node_modules[\\/]zod[\\/]v4[\\/]locales[\\/]index\.js$/ }, () => ({ contents: 'export { default as en } from "./en.js";\n', loader: 'js' }));
  },
};

/** Files besides src/ whose change changes the build: the packages bundled, the version, how it is built, the fold digest's code. */
const BUILD_INPUTS = ['package.json', 'package-lock.json', 'scripts/build-cli.js', 'bin/fold-version.js'];

const newestIn = (dir) => {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestIn(path));
    else if (/\.tsx?$/.test(entry.name) && !/\.test\.tsx?$/.test(entry.name)) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
};

/** The newest modification time (ms) of anything the build is made from (a test is not). */
export const newestSource = (at = root) => Math.max(newestIn(join(at, 'src')), ...BUILD_INPUTS.map((file) => statSync(join(at, file)).mtimeMs));

const readRecord = (at) => {
  try {
    return JSON.parse(readFileSync(buildRecordFile(at), 'utf8'));
  } catch {
    return undefined;
  }
};

/**
 * Why dist/ must be built again, or undefined when it is as new as its sources. The newest time is
 * recorded as the number stat gave, not stamped on a file: a file's time goes through a Date, which
 * loses the sub-millisecond part, and comparing that with a source's made every run build again.
 */
export const staleness = (at = root) => {
  const record = readRecord(at);
  if (!record || !existsSync(join(distDir(at), 'mesh.mjs'))) return 'dist/ has no build';
  if (!(record.files ?? []).every((file) => existsSync(join(distDir(at), file)))) return 'a file of the build is missing from dist/';
  return newestSource(at) > record.newestSource ? 'a source is newer than dist/' : undefined;
};

/**
 * Builds dist/ from the sources. Every file is written beside its place and renamed into it, the
 * shared parts first and the entry last, so a verb starting meanwhile reads either build whole; the
 * files of the builds before the last are then removed. Returns the build's record.
 */
export const buildCli = async (at = root) => {
  const newest = newestSource(at);
  const before = readRecord(at);
  const { build } = await import('esbuild');
  const { foldVersionDefine, FOLD_VERSION_DEFINE } = await import('../bin/fold-version.js');
  const version = JSON.parse(readFileSync(join(at, 'package.json'), 'utf8')).version;
  const foldDefine = foldVersionDefine(at);
  const foldVersion = JSON.parse(foldDefine[FOLD_VERSION_DEFINE]);
  const outdir = distDir(at);
  const built = await build({
    entryPoints: { mesh: join(at, 'src', 'cli', 'main.ts') },
    bundle: true,
    splitting: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outdir,
    // Flat in dist/: src/config.ts finds the package's root as the folder above its own file.
    chunkNames: '[name]-[hash]',
    outExtension: { '.js': '.mjs' },
    external: UNBUNDLED,
    // CommonJS packages bundled into an ES module still call require() for node's own modules.
    banner: { js: "import { createRequire as createRequireOfTheBundle } from 'node:module'; const require = createRequireOfTheBundle(import.meta.url);" },
    sourcemap: 'linked',
    // What the bundle carries because no source travels with it: the fold's code version
    // (bin/fold-version.js) and the package's version, both printed by `mesh --version`.
    define: { ...foldDefine, MESH_VERSION: JSON.stringify(version) },
    plugins: [pgOnNode, zodInEnglish],
    metafile: true,
    write: false,
    logLevel: 'warning',
  });
  mkdirSync(outdir, { recursive: true });
  const entry = join(outdir, 'mesh.mjs');
  const ordered = [...built.outputFiles.filter((file) => file.path !== entry && file.path !== `${entry}.map`), ...built.outputFiles.filter((file) => file.path === `${entry}.map`), ...built.outputFiles.filter((file) => file.path === entry)];
  const files = ordered.map((file) => basename(file.path));
  const record = { newestSource: newest, version, foldVersion, files };
  const writes = [...ordered.map((file) => ({ path: file.path, contents: file.contents })), { path: metafileOf(at), contents: JSON.stringify(built.metafile) }, { path: buildRecordFile(at), contents: `${JSON.stringify(record, null, 2)}\n` }];
  for (const { path, contents } of writes) {
    const partial = `${path}.${process.pid}.tmp`;
    writeFileSync(partial, contents);
    renameSync(partial, path);
  }
  // The build before this one stays too: a process started from it (a controller `mesh dev up`
  // ran) may still import a verb's file it has not loaded yet. Older builds go.
  const kept = new Set([...files, ...(before?.files ?? []), basename(metafileOf(at)), basename(buildRecordFile(at))]);
  for (const name of readdirSync(outdir)) if (!kept.has(name) && !name.endsWith('.tmp')) rmSync(join(outdir, name), { force: true });
  return record;
};

/** Builds dist/ if it is older than its sources; `say` is told why, in one line. Returns whether it built. */
export const ensureCliBuilt = async ({ at = root, say = () => undefined } = {}) => {
  const why = staleness(at);
  if (why === undefined) return false;
  say(`mesh: ${why}; building it (scripts/build-cli.js)…`);
  await buildCli(at);
  return true;
};

/** Removes from dist/ every file the last build did not write (npm's prepack: the package carries one build). */
export const pruneCli = (at = root) => {
  const record = readRecord(at);
  if (!record) return;
  const kept = new Set([...record.files, basename(metafileOf(at)), basename(buildRecordFile(at))]);
  for (const name of readdirSync(distDir(at))) if (!kept.has(name)) rmSync(join(distDir(at), name), { force: true });
};

// `node scripts/build-cli.js [--if-stale] [--prune]`: build dist/ (npm's prepare and prepack);
// with --if-stale only when a source is newer than it; with --prune, the files of the build alone stay.
if (import.meta.url === `file://${process.argv[1]}`) {
  const started = Date.now();
  if (!process.argv.includes('--if-stale') || staleness() !== undefined) {
    const record = await buildCli();
    process.stderr.write(`mesh ${record.version}: built dist/ (${record.files.filter((file) => file.endsWith('.mjs')).length} modules) in ${Date.now() - started} ms\n`);
  }
  if (process.argv.includes('--prune')) pruneCli();
}
