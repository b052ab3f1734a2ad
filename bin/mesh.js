#!/usr/bin/env node
// The `mesh` command. It runs the CLI from one bundled file (dist/mesh.mjs), rebuilt with esbuild
// whenever a source file is newer, so a checkout works after `npm ci` with no build step and
// every verb starts in a fraction of the time a per-file TypeScript loader takes.
import { existsSync, readdirSync, renameSync, statSync, utimesSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

const root = fileURLToPath(new URL('../', import.meta.url));
const bundle = join(root, 'dist', 'mesh.mjs');

const newestSource = (dir) => {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(path));
    else if (entry.name.endsWith('.ts') || entry.name.endsWith('.tsx')) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
};

const newest = newestSource(join(root, 'src'));
// Compared to the millisecond: a bundle is stamped through a Date, which keeps no finer time than
// that, and a source's sub-millisecond part would otherwise have every run build again.
if (!existsSync(bundle) || Math.floor(statSync(bundle).mtimeMs) < Math.floor(newest)) {
  const { build } = await import('esbuild');
  const { foldVersionDefine } = await import('./fold-version.js');
  // Built beside and renamed into place, so two verbs starting at once never read half a file.
  const partial = `${bundle}.${process.pid}.tmp`;
  await build({
    entryPoints: [join(root, 'src', 'cli', 'main.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    sourcemap: 'inline',
    // The fold's code version, computed from the sources the bundle is built from (no source travels with it).
    define: foldVersionDefine(root),
    outfile: partial,
    logLevel: 'error',
  });
  // Stamped with the newest source it was built from, not the time it finished: a source saved
  // while it was building is newer than the bundle, so the next run builds again.
  utimesSync(partial, new Date(newest), new Date(newest));
  renameSync(partial, bundle);
}
process.setSourceMapsEnabled(true);
const { main, nodeFlagsFor } = await import(bundle);
const argv = process.argv.slice(2);
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
