#!/usr/bin/env node
// The `mesh` command. It runs the CLI from dist/, built by scripts/build-cli.js at pack or install
// time (npm's `prepare`), never on a verb's run: dist/mesh.mjs holds the verbs' definitions, and
// each verb loads its implementation when it runs (docs/decisions.md, "One package, built once").
// In a checkout (src/ beside bin/) whose sources are newer than dist/, it builds dist/ again first
// and says so on stderr: a developer's edit is what runs. An installed package has no src/.
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { join } from 'node:path';

const root = fileURLToPath(new URL('../', import.meta.url));

if (existsSync(join(root, 'src', 'cli', 'main.ts'))) {
  const { ensureCliBuilt } = await import('../scripts/build-cli.js');
  await ensureCliBuilt({ say: (line) => process.stderr.write(`${line}\n`) });
}

/**
 * Verbs that run for long (servers and agents): they load the bundle's source maps at start, so
 * what they log of an error names the TypeScript source. A one-shot verb starts without that
 * cost and maps a stack itself only when it prints one (src/cli/source-map.ts).
 */
const LONG_RUNNING = new Set(['controller', 'agent', 'builder', 'vault', 'proxy', 'postgres']);

const argv = process.argv.slice(2);
if (LONG_RUNNING.has(argv[0])) process.setSourceMapsEnabled(true);
const { main, nodeFlagsFor } = await import(pathToFileURL(join(root, 'dist', 'mesh.mjs')).href);
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
