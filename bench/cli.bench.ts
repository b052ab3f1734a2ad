// How soon the CLI answers: `mesh --help`, `mesh --version` and the read verbs an operator types
// most (`mesh status`, `mesh seats`, `mesh node show NAME`), each as an operator runs it (a process
// of its own, `bin/mesh.js` from this checkout, dist/ built beforehand), against `node -e 0` on the
// same machine in the same run: RUNS of each, taken in turn so a busy moment weighs on all alike.
// Targets, as p50 ÷ p50 of `node -e 0`: --help and --version ≤ 3×, each read verb ≤ 6×.
//
//   npm run bench:cli     (BENCH_CLI_RUNS=20 BENCH_CLI_EVENTS=2000 BENCH_CLI_NODES=50;
//                          BENCH_CPU_PROF=DIR writes one CPU profile of each verb there;
//                          BENCH_CLI_COMPARE=DIR measures DIR/bin/mesh.js beside, e.g. an export of an
//                          older commit with its own dist/, for a before-and-after in one run)
//
// The reads need a mesh: it raises one of its own (bench/cost-stack.ts: a nats-server and a
// PostgreSQL on ports of their own, MESH_TEST_*_PORT, a log of BENCH_CLI_EVENTS events of a
// BENCH_CLI_NODES-node mesh folded into the projections, and the real `mesh controller` on it), and
// removes it at the end.

import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { projectRoot } from '../src/config.js';
import { BENCH_PORTS, count, now, prepareMesh, print, say, sleep, startBenchServers, startControllerProcess, type BenchMesh, type BenchServers, type ControllerProcess } from './cost-stack.js';
import { nodeName } from './mesh-history.js';

const RUNS = Number(process.env.BENCH_CLI_RUNS ?? 20);
const EVENTS = Number(process.env.BENCH_CLI_EVENTS ?? 2_000);
const NODES = Number(process.env.BENCH_CLI_NODES ?? 50);
const PROFILE_DIR = process.env.BENCH_CPU_PROF;
const COMPARE = process.env.BENCH_CLI_COMPARE;

interface Measured {
  label: string;
  args: readonly string[];
  /** the ratio to `node -e 0` it must stay within; none for the baseline */
  target?: number;
  /** exit codes that are an answer (`mesh status` says 1 when the mesh is not doing what it was told) */
  answers: readonly number[];
  ms: number[];
}

const MESH = join(projectRoot, 'bin', 'mesh.js');

/** One run of `node ARGS`: its wall time in ms from spawn to exit, its exit code and what it said. */
const timed = (args: readonly string[], env: NodeJS.ProcessEnv): Promise<{ ms: number; code: number; stdout: string; stderr: string }> =>
  new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(process.execPath, args, { cwd: projectRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ ms: Number(process.hrtime.bigint() - started) / 1e6, code: code ?? 128, stdout, stderr }));
  });

const percentile = (samples: readonly number[], p: number): number => {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * p) - 1)] ?? NaN;
};

/** The environment the verbs read the bench's mesh with: this process's, its MESH_ settings replaced by the mesh's. */
const envOf = (mesh: BenchMesh): NodeJS.ProcessEnv => ({
  ...Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('MESH_'))),
  ...mesh.env,
});

/** Until `mesh status` reads every projection caught up with the controller's own first commits. */
const waitForReads = async (env: NodeJS.ProcessEnv, controller: ControllerProcess): Promise<void> => {
  const until = now() + 300;
  for (;;) {
    const run = await timed([MESH, 'status', '--json'], env);
    if (run.code <= 1 && run.stdout.startsWith('{')) return;
    if (controller.child.exitCode !== null) throw new Error(`the controller exited with ${controller.child.exitCode}: ${controller.errors.join('\n')}`);
    if (now() > until) throw new Error(`mesh status did not answer in 300 s: ${run.stderr.trim() || run.stdout.trim()}`);
    await sleep(500);
  }
};

const main = async (): Promise<void> => {
  // Nothing is built on a verb's run: dist/ is made now, as `npm ci` or `npm pack` makes it.
  const build = spawnSync(process.execPath, [join(projectRoot, 'scripts', 'build-cli.js'), '--if-stale'], { stdio: 'inherit' });
  if (build.status !== 0) throw new Error(`scripts/build-cli.js exited ${build.status}`);

  let servers: BenchServers | undefined;
  let controller: ControllerProcess | undefined;
  try {
    servers = await startBenchServers('cli');
    const mesh = await prepareMesh(servers, 'cli', EVENTS, { nodes: NODES });
    controller = startControllerProcess(mesh, BENCH_PORTS.http);
    const env = envOf(mesh);
    await waitForReads(env, controller);
    say(`  the controller (pid ${controller.pid}) serves reads, ${(now() - controller.spawnedAt).toFixed(1)} s after spawn`);

    const node = nodeName(0);
    const measured: Measured[] = [
      { label: 'node -e 0', args: ['-e', '0'], answers: [0], ms: [] },
      { label: 'mesh --help', args: [MESH, '--help'], target: 3, answers: [0], ms: [] },
      { label: 'mesh --version', args: [MESH, '--version'], target: 3, answers: [0], ms: [] },
      { label: 'mesh status', args: [MESH, 'status'], target: 6, answers: [0, 1], ms: [] },
      { label: 'mesh seats', args: [MESH, 'seats'], target: 6, answers: [0], ms: [] },
      { label: `mesh node show ${node}`, args: [MESH, 'node', 'show', node], target: 6, answers: [0], ms: [] },
    ];
    if (COMPARE) {
      const other = join(COMPARE, 'bin', 'mesh.js');
      for (const m of measured.slice(1).filter((m) => m.label !== 'mesh --version')) measured.push({ label: `${m.label} (compared)`, args: [other, ...m.args.slice(1)], answers: m.answers, ms: [] });
    }
    // Once each, untimed: every answer is checked to be one, and the files are in the page cache.
    for (const m of measured) {
      const run = await timed(m.args, env);
      if (!m.answers.includes(run.code)) throw new Error(`${m.label} exited ${run.code}: ${run.stderr.trim() || run.stdout.trim()}`);
      if (run.stderr.includes('building it')) throw new Error(`${m.label} built dist/ on its run: ${run.stderr.trim()}`);
    }
    if (PROFILE_DIR) {
      for (const m of measured.slice(1)) await timed(['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`, `--cpu-prof-name=${m.label.replaceAll(' ', '_')}.cpuprofile`, ...m.args], env);
      say(`  a CPU profile of each verb is in ${PROFILE_DIR}`);
    }
    say(`measuring ${count(RUNS)} runs of each, in turn…`);
    for (let i = 0; i < RUNS; i++) {
      for (const m of measured) {
        const run = await timed(m.args, env);
        if (!m.answers.includes(run.code)) throw new Error(`${m.label} exited ${run.code}: ${run.stderr.trim() || run.stdout.trim()}`);
        m.ms.push(run.ms);
      }
    }

    const base = measured[0] as Measured;
    const baseP50 = percentile(base.ms, 0.5);
    const baseP95 = percentile(base.ms, 0.95);
    print('');
    print(`The CLI's answer time: ${RUNS} runs of each, taken in turn, on a mesh of ${count(NODES)} nodes whose log holds ${count(mesh.history.events)} events`);
    print('');
    print(`${'command'.padEnd(35)} ${'p50 ms'.padStart(8)} ${'p95 ms'.padStart(8)} ${'p50 ×'.padStart(7)} ${'p95 ×'.padStart(7)}  target`);
    let missed = 0;
    for (const m of measured) {
      const p50 = percentile(m.ms, 0.5);
      const p95 = percentile(m.ms, 0.95);
      const ratio = p50 / baseP50;
      const verdict = m.target === undefined ? (m === base ? '(the baseline)' : '') : `≤ ${m.target}× ${ratio <= m.target ? 'met' : 'MISSED'}`;
      if (m.target !== undefined && ratio > m.target) missed++;
      print(`${m.label.padEnd(35)} ${p50.toFixed(0).padStart(8)} ${p95.toFixed(0).padStart(8)} ${ratio.toFixed(2).padStart(7)} ${(p95 / baseP95).toFixed(2).padStart(7)}  ${verdict}`);
    }
    if (COMPARE) print(`(compared: ${COMPARE}/bin/mesh.js, in the same turns)`);
    print('');
    print(missed === 0 ? 'every target met (p50 ÷ p50 of node -e 0)' : `${missed} target(s) missed (p50 ÷ p50 of node -e 0)`);
  } finally {
    await controller?.stop();
    await servers?.stop();
  }
};

main().then(
  () => process.exit(0),
  (error: unknown) => {
    say(`bench:cli failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    process.exit(1);
  },
);
