// `npm test`: installs what is missing, then type check, lint and the jest suite (whose global
// setup starts its own nats-server and PostgreSQL with the dev stack scripts). Ends with one
// plain summary line: "N passed, N failed".
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureNpmPackages, root } from './ensure-deps.js';

ensureNpmPackages();

const run = (label, command, args, env = {}) => {
  process.stderr.write(`\n== ${label}\n`);
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } });
  return result.status ?? 1;
};

const jestArgs = process.argv.slice(2);
const resultsFile = join(root, '.mesh', 'jest-results.json');
mkdirSync(join(root, '.mesh'), { recursive: true });

const failures = [];
// First, dist/ as new as the sources: no test (and no `mesh` the suite runs) pays a build.
if (run('build the CLI (scripts/build-cli.js, if a source is newer than dist/)', process.execPath, [join(root, 'scripts', 'build-cli.js'), '--if-stale']) !== 0) failures.push('build');
if (jestArgs.length === 0) {
  if (run('type check (tsc --noEmit)', 'npx', ['tsc', '--noEmit']) !== 0) failures.push('type check');
  if (run('lint (eslint)', 'npx', ['eslint', '.']) !== 0) failures.push('lint');
}
const jestStatus = run(
  'tests (jest, against real nats-server and PostgreSQL)',
  process.execPath,
  ['--experimental-vm-modules', join(root, 'node_modules/jest/bin/jest.js'), '--json', `--outputFile=${resultsFile}`, ...jestArgs],
  // Two cores beside the suite's own servers: a handshake can take seconds when many suites start at once.
  { NODE_NO_WARNINGS: '1', MESH_NATS_CONNECT_TIMEOUT_MS: process.env.MESH_NATS_CONNECT_TIMEOUT_MS ?? '15000' },
);
if (jestStatus !== 0) failures.push('tests');

let passed = 0;
let failed = 0;
if (existsSync(resultsFile)) {
  const results = JSON.parse(readFileSync(resultsFile, 'utf8'));
  passed = results.numPassedTests;
  failed = results.numFailedTests + (results.numRuntimeErrorTestSuites ?? 0);
}
if (failures.length > 0) process.stderr.write(`\nfailed: ${failures.join(', ')}\n`);
process.stdout.write(`\n${passed} passed, ${failed} failed\n`);
process.exit(failures.length > 0 ? 1 : 0);
