#!/usr/bin/env node
// The `mesh` command. It runs the CLI from one bundled file (dist/mesh.mjs), rebuilt with esbuild
// whenever a source file is newer, so a checkout works after `npm ci` with no build step and
// every verb starts in a fraction of the time a per-file TypeScript loader takes. The npm packages
// are bundled too: a verb otherwise opens some 650 files of node_modules before it does anything.
import { existsSync, mkdirSync, readdirSync, renameSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { basename, dirname, join } from 'node:path';

const root = fileURLToPath(new URL('../', import.meta.url));
const bundle = join(root, 'dist', 'mesh.mjs');

/**
 * Packages loaded from node_modules as they are: those that find files of their own by
 * `__dirname` at load (pg-listen's pg-format), start worker threads from a file (pino's
 * transports), or are optional native parts.
 */
const UNBUNDLED = ['pg-native', 'pg-listen', 'pg-format', 'pino', 'thread-stream', 'pino-pretty', 'esbuild', 'playwright', 'playwright-core', '@playwright/test'];

/**
 * Verbs that run for long (servers and agents): they load the bundle's source map at start, so
 * what they log of an error names the TypeScript source. A one-shot verb starts without that
 * cost and maps a stack itself only when it prints one (src/cli/source-map.ts).
 */
const LONG_RUNNING = new Set(['controller', 'agent', 'builder', 'vault', 'proxy', 'postgres']);

const newestSource = (dir) => {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(path));
    else if (entry.name.endsWith('.ts') || entry.name.endsWith('.tsx')) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
};

// The packages bundled are what package-lock.json names (npm ci rewrites node_modules after it),
// and how they are bundled is this file: either newer means building again.
const newest = Math.max(newestSource(join(root, 'src')), statSync(join(root, 'package-lock.json')).mtimeMs, statSync(fileURLToPath(import.meta.url)).mtimeMs);
// Compared to the millisecond: a bundle is stamped through a Date, which keeps no finer time than
// that, and a source's sub-millisecond part would otherwise have every run build again.
if (!existsSync(bundle) || Math.floor(statSync(bundle).mtimeMs) < Math.floor(newest)) {
  const { build } = await import('esbuild');
  const { foldVersionDefine } = await import('./fold-version.js');
  const built = await build({
    entryPoints: [join(root, 'src', 'cli', 'main.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external: UNBUNDLED,
    // CommonJS packages bundled into an ES module still call require() for node's own modules.
    banner: { js: "import { createRequire as createRequireOfTheBundle } from 'node:module'; const require = createRequireOfTheBundle(import.meta.url);" },
    sourcemap: 'linked',
    // The fold's code version, computed from the sources the bundle is built from (no source travels with it).
    define: foldVersionDefine(root),
    outfile: bundle,
    write: false,
    logLevel: 'error',
  });
  const map = built.outputFiles.find((output) => output.path === `${bundle}.map`);
  const code = built.outputFiles.find((output) => output.path === bundle);
  if (!map || !code) throw new Error(`esbuild did not write both ${basename(bundle)} and its map: it wrote ${built.outputFiles.map((output) => basename(output.path)).join(', ')}`);
  mkdirSync(dirname(bundle), { recursive: true });
  // Written beside and renamed into place, the map before the bundle, so two verbs starting at
  // once never read half a file; a bundle as new as its sources always has its map.
  for (const output of [map, code]) {
    const partial = `${output.path}.${process.pid}.tmp`;
    writeFileSync(partial, output.contents);
    // Stamped with the newest source it was built from, not the time it finished: a source saved
    // while it was building is newer than the bundle, so the next run builds again.
    utimesSync(partial, new Date(newest), new Date(newest));
    renameSync(partial, output.path);
  }
}
const argv = process.argv.slice(2);
if (LONG_RUNNING.has(argv[0])) process.setSourceMapsEnabled(true);
const { main, nodeFlagsFor } = await import(bundle);
const missingFlags = nodeFlagsFor(argv).filter((flag) => !process.execArgv.includes(flag));
if (missingFlags.length === 0) {
  process.exitCode = await main(argv);
} else {
  // A verb that folds the log wants node run with flags of its own (see src/projections/runtime.ts):
  // run it again with them, passing on the signals that stop it and its exit status.
  const { spawn } = await import('node:child_process');
  const { constants } = await import('node:os');
  const child = spawn(process.execPath, [...missingFlags, ...process.execArgv, fileURLToPath(import.meta.url), ...argv], { stdio: 'inherit' });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  process.exitCode = await new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? 128 + (constants.signals[signal] ?? 0))));
}
