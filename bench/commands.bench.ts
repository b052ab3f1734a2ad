// What an operator's command costs through a running controller: signed as the CLI signs it, sent
// to the mesh-controller seat's tool on the bus, its signature verified, decided against the mesh,
// appended, answered. On a 1,000-node mesh whose log holds BENCH_COMMANDS_EVENTS events
// (bench/mesh-history.ts), with its projections folded first:
//
//   (a) one client, its commands one after another;
//   (b) 32 clients at once, each its own connection and its commands one after another;
//   (c) Emmett's CommandHandler on PostgreSQL, the peer's figure of (b) (../shared/bench/peer-emmett,
//       copied to a temporary folder and run there with ONLY=command RUNS=1);
//   (d) two controller processes on the same log, the 32 clients' calls split between them by the
//       tools' queue group.
//
// Targets: (b) ÷ (a) ≥ 3, (b) ÷ Emmett ≥ 2, (d) ÷ (b) ≥ 0.8. Every command does a real decision and
// appends one commit (each client: an `add-node` of a fresh name, then a service assigned to a node
// of its own and unassigned again, over and over); the log's head is counted before and after, and
// any refusal or error is printed.
//
//   npm run bench:commands   (BENCH_SEQUENTIAL=2000 BENCH_CLIENTS=32 BENCH_PER_CLIENT=300 BENCH_COMMANDS_EVENTS=10000;
//                             BENCH_RUNS=a,b,d picks the runs; BENCH_EMMETT=0 leaves the peer out; its servers: NATS_PORT 44333, NATS_HTTP_PORT 44334, PG_PORT 45433)
//
// Servers of its own (bench/cost-stack.ts, ports 44222 / 48222 / 45432 / 48081 and 48082), removed at the end.

import { spawnSync } from 'node:child_process';
import { generateKeyPairSync, sign, verify } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MeshCommand } from '../src/domain/mesh/commands.js';
import { BENCH_PORTS, buildCli, commitsBetween, connectOperator, count, logHead, now, prepareMesh, print, say, sendUntilAnswered, sleep, startBenchServers, startControllerProcess, type BenchMesh, type BenchServers, type ControllerProcess, type Operator } from './cost-stack.js';
import { nodeName, SERVICES, serviceName } from './mesh-history.js';
import { runAsFolding } from './folding-process.js';

const SEQUENTIAL = Number(process.env.BENCH_SEQUENTIAL ?? 2_000);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 32);
const PER_CLIENT = Number(process.env.BENCH_PER_CLIENT ?? 300);
const EVENTS = Number(process.env.BENCH_COMMANDS_EVENTS ?? 10_000);
const EMMETT = process.env.BENCH_EMMETT !== '0';
const PEER_DIR = process.env.BENCH_PEER_DIR ?? '/work/shared/bench';
/** Which of (a), (b) and (d) to run: all by default; `BENCH_RUNS=b` with BENCH_CPU_PROF profiles one alone. */
const RUNS = new Set((process.env.BENCH_RUNS ?? 'a,b,d').split(',').map((run) => run.trim()));

interface Run {
  label: string;
  commands: number;
  seconds: number;
  /** commands answered as carried out (events appended, not a duplicate) */
  carriedOut: number;
  /** failures by kind (numbers and names left out), with one whole example each */
  failed: Map<string, { n: number; example: string }>;
  latencies: number[];
  /** CPU the controller processes used during the run (user and system) */
  controllerCpuSeconds: number;
  /** CPU used during the run by the other parts: the servers, this process's clients, the whole machine */
  cpu: CpuShares;
  /** commits of this run's commands the log took */
  logged: number;
  /** commands answered as failed that the log took all the same */
  loggedThoughFailed: number;
  /** commands answered as carried out that the log does not hold */
  missing: number;
  /** commits the controller appended of its own meanwhile, by event types */
  ownCommits: Map<string, number>;
}

const rate = (run: Run): number => run.carriedOut / run.seconds;
const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;

/**
 * One client's commands: an `add-node` of a fresh name every third, otherwise a service assigned
 * to the client's own node and unassigned again. The node runs the agent and svc-(n mod 10); the
 * service it is given is another, svc-(n+5 mod 10), which it does not run. A command that failed
 * is followed by the same kind again, so the next one still has something to decide.
 */
const workload = (tag: string, node: number) => {
  const module = serviceName((node + SERVICES / 2) % SERVICES);
  let assigned = false;
  return {
    next: (i: number): MeshCommand => {
      if (i % 3 === 0) return { type: 'add-node', node: `${tag}-${i}` };
      return assigned ? { type: 'unassign', module, node: nodeName(node) } : { type: 'assign', module, node: nodeName(node), hold: [], pins: {}, values: {}, placements: {} };
    },
    carriedOut: (command: MeshCommand): void => {
      if (command.type === 'assign') assigned = true;
      if (command.type === 'unassign') assigned = false;
    },
  };
};

/** A process's /proc stat fields after its name: [state, ppid, …, utime at 11, stime at 12]. */
const statOf = (pid: string | number): string[] => {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  } catch {
    return [];
  }
};

/**
 * CPU seconds (user and system) a process and its children have used, from /proc: what a run cost
 * the controllers, whatever else loads the machine (`bin/mesh.js` may run the verb in a child
 * with the node flags it wants).
 */
const cpuSecondsOf = (pid: number | undefined): number => {
  if (pid === undefined) return 0;
  const children = readdirSync('/proc').filter((entry) => /^\d+$/.test(entry) && statOf(entry)[1] === String(pid));
  return [String(pid), ...children].reduce((sum, id) => {
    const fields = statOf(id);
    return sum + (Number(fields[11] ?? 0) + Number(fields[12] ?? 0)) / CLOCK_TICKS;
  }, 0);
};
/** USER_HZ: 100 on Linux for every architecture this runs on. */
const CLOCK_TICKS = 100;

/**
 * CPU seconds of every process named `comm`, with what its reaped children used (PostgreSQL's
 * backends end with their connections; the postmaster's cutime keeps them).
 */
const cpuSecondsNamed = (comm: string): number =>
  readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .reduce((sum, id) => {
      let name: string;
      try {
        name = readFileSync(`/proc/${id}/comm`, 'utf8').trim();
      } catch {
        return sum;
      }
      if (name !== comm) return sum;
      const fields = statOf(id);
      return sum + (Number(fields[11] ?? 0) + Number(fields[12] ?? 0) + Number(fields[13] ?? 0) + Number(fields[14] ?? 0)) / CLOCK_TICKS;
    }, 0);

/** The whole machine's busy CPU seconds (every core), from /proc/stat: all but idle and iowait. */
const machineBusySeconds = (): number => {
  const fields = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/).slice(1).map(Number);
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = fields;
  return (user + nice + system + irq + softirq + steal) / CLOCK_TICKS;
};

interface CpuShares {
  natsServer: number;
  postgres: number;
  /** this process: the clients signing and sending */
  clients: number;
  machine: number;
}

const cpuNow = (): CpuShares => {
  const own = process.cpuUsage();
  return { natsServer: cpuSecondsNamed('nats-server'), postgres: cpuSecondsNamed('postgres'), clients: (own.user + own.system) / 1e6, machine: machineBusySeconds() };
};

const cpuSince = (before: CpuShares): CpuShares => {
  const after = cpuNow();
  return { natsServer: after.natsServer - before.natsServer, postgres: after.postgres - before.postgres, clients: after.clients - before.clients, machine: after.machine - before.machine };
};

const runClients = async (servers: BenchServers, mesh: BenchMesh, tag: string, label: string, clients: number, perClient: number, firstNode: number, controllers: readonly ControllerProcess[]): Promise<Run> => {
  const controllerCpu = (): number => controllers.reduce((sum, c) => sum + cpuSecondsOf(c.pid), 0);
  const cpuBefore = controllerCpu();
  const operators: Operator[] = [];
  for (let c = 0; c < clients; c++) operators.push(await connectOperator(mesh, `bench-client-${c}`));
  const failed = new Map<string, { n: number; example: string }>();
  const latencies: number[] = [];
  const answered = new Set<string>();
  const failedIds = new Set<string>();
  const headBefore = await logHead(servers, mesh);
  const started = now();
  const othersBefore = cpuNow();
  try {
    await Promise.all(
      operators.map(async (operator, c) => {
        const client = workload(`${tag}-c${c}`, firstNode + c);
        for (let i = 0; i < perClient; i++) {
          const command = client.next(i);
          const commandId = `${tag}-c${c}-${i}`;
          const sent = now();
          let why: string;
          try {
            const answer = await operator.send(command, commandId);
            latencies.push(now() - sent);
            if (answer.events.length > 0 && !answer.duplicate) {
              answered.add(commandId);
              client.carriedOut(command);
              continue;
            }
            why = `appended nothing: ${answer.summary}`;
          } catch (error) {
            why = `${(error as Error).name}: ${(error as Error).message.split('\n').join(' ')}`;
          }
          failedIds.add(commandId);
          const kind = why.replace(/\b[a-z]-c\d+-\d+\b/g, 'NODE').replace(/\d+/g, 'N').slice(0, 160);
          const seen = failed.get(kind);
          if (seen) seen.n++;
          else failed.set(kind, { n: 1, example: why.slice(0, 300) });
        }
      }),
    );
  } finally {
    for (const operator of operators) await operator.close();
  }
  const seconds = now() - started;
  const controllerCpuSeconds = controllerCpu() - cpuBefore;
  const cpu = cpuSince(othersBefore);
  // What the log took meanwhile: this run's commands (by their ids) and the controller's own commits.
  const commits = await commitsBetween(servers, mesh, headBefore + 1, await logHead(servers, mesh));
  const ours = commits.filter((commit) => commit.commandId.startsWith(`${tag}-c`));
  const ownCommits = new Map<string, number>();
  for (const commit of commits) {
    if (commit.commandId.startsWith(`${tag}-c`)) continue;
    const kind = `${commit.actor}: ${[...new Set(commit.types)].join(' + ')}`;
    ownCommits.set(kind, (ownCommits.get(kind) ?? 0) + 1);
  }
  const logged = new Set(ours.map((commit) => commit.commandId));
  return {
    label,
    commands: clients * perClient,
    seconds,
    carriedOut: answered.size,
    failed,
    latencies: latencies.sort((a, b) => a - b),
    logged: ours.length,
    loggedThoughFailed: [...failedIds].filter((id) => logged.has(id)).length,
    missing: [...answered].filter((id) => !logged.has(id)).length,
    ownCommits,
    controllerCpuSeconds,
    cpu,
  };
};

/** A controller process on `mesh`, answering commands: the time it took is not counted. */
const readyController = async (mesh: BenchMesh, httpPort: number, label: string): Promise<ControllerProcess> => {
  const controller = startControllerProcess(mesh, httpPort);
  const operator = await connectOperator(mesh);
  try {
    // The first controller answers this; a second one is ready once it says it has started.
    await sendUntilAnswered(operator, { type: 'add-node', node: `ready-${label}` }, `ready-${label}`, controller, 600);
    while (!controller.said.has('controller started')) {
      if (controller.child.exitCode !== null) throw new Error(`controller ${label} exited with ${controller.child.exitCode}: ${controller.errors.join('\n')}`);
      await sleep(50);
    }
  } catch (error) {
    await controller.stop();
    throw error;
  } finally {
    await operator.close();
  }
  say(`  controller ${label} (pid ${controller.pid}) answering, ${(now() - controller.spawnedAt).toFixed(1)} s after spawn`);
  return controller;
};

/** Emmett's CommandHandler, as ../shared/bench/peer-emmett runs it: commands/s, or why there is no figure. */
const emmettCommands = (): { rate?: number; label?: string; why?: string } => {
  if (!existsSync(join(PEER_DIR, 'peer-emmett', 'run.sh'))) return { why: `no ${PEER_DIR}/peer-emmett/run.sh` };
  const dir = mkdtempSync(join(tmpdir(), 'mesh-peer-bench-'));
  try {
    cpSync(PEER_DIR, dir, { recursive: true });
    // Copied from a read-only folder: made writable, so npm ci may install beside it, and open to
    // the OS user its PostgreSQL runs as.
    spawnSync('chmod', ['-R', 'u+w,go+rX', dir]);
    const results = join(dir, 'emmett-results.json');
    say(`(c) Emmett's CommandHandler on PostgreSQL (${join(dir, 'peer-emmett')}: ONLY=command RUNS=1)…`);
    const env: NodeJS.ProcessEnv = { ...process.env, ONLY: 'command', RUNS: '1', RESULTS_JSON: results, NATS_PORT: process.env.NATS_PORT ?? '44333', NATS_HTTP_PORT: process.env.NATS_HTTP_PORT ?? '44334', PG_PORT: process.env.PG_PORT ?? '45433' };
    delete env.BENCH_SERVERS_DIR;
    // Its own table goes with the progress (stderr): this bench's stdout is its figures alone.
    const run = spawnSync(join(dir, 'peer-emmett', 'run.sh'), [], { env, stdio: ['ignore', 2, 2] });
    if (run.status !== 0) return { why: `peer-emmett/run.sh exited ${run.status ?? run.signal}` };
    const parsed = JSON.parse(readFileSync(results, 'utf8')) as { results: { id: string; label: string; median: number; unit: string }[] };
    const command = parsed.results.find((r) => r.id === 'command');
    return command ? { rate: command.median, label: command.label } : { why: 'no "command" figure in its results' };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
};

/**
 * Microseconds of one native Ed25519 signature and one verification, of a command's size, in this
 * process: every command costs two signatures (the operator's, the commit's) and one verification
 * on the way in, whatever the control plane does around them.
 */
const ed25519Micros = (): { sign: number; verify: number } => {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const message = Buffer.from(JSON.stringify({ commandId: 'b-c31-299', operator: 'bench-operator', command: { type: 'assign', module: 'svc-5', node: nodeName(1), hold: [], pins: {}, values: {}, placements: {} }, time: new Date().toISOString() }));
  const signature = sign(null, message, privateKey);
  const timed = (op: () => unknown): number => {
    for (let i = 0; i < 500; i++) op();
    const n = 5_000;
    const started = now();
    for (let i = 0; i < n; i++) op();
    return ((now() - started) / n) * 1e6;
  };
  return { sign: timed(() => sign(null, message, privateKey)), verify: timed(() => verify(null, message, publicKey, signature)) };
};

const main = async (): Promise<void> => {
  buildCli();
  const servers = await startBenchServers('commands');
  const runs: Run[] = [];
  let mesh: BenchMesh | undefined;
  const controllers: ControllerProcess[] = [];
  try {
    mesh = await prepareMesh(servers, 'cmd', EVENTS);
    const first = await readyController(mesh, BENCH_PORTS.http, 'a');
    controllers.push(first);
    if (RUNS.has('a')) {
      say(`(a) one client, ${count(SEQUENTIAL)} commands one after another…`);
      runs.push(await runClients(servers, mesh, 'a', '(a) one client, sequential', 1, SEQUENTIAL, 500, controllers));
    }
    if (RUNS.has('b')) {
      say(`(b) ${CLIENTS} clients at once, ${count(PER_CLIENT)} commands each…`);
      runs.push(await runClients(servers, mesh, 'b', `(b) ${CLIENTS} clients, one controller`, CLIENTS, PER_CLIENT, 600, controllers));
    }
    if (RUNS.has('d')) {
      say(`(d) a second controller process on the same log…`);
      controllers.push(await readyController(mesh, BENCH_PORTS.http + 1, 'b'));
      runs.push(await runClients(servers, mesh, 'd', `(d) ${CLIENTS} clients, two controllers on one log`, CLIENTS, PER_CLIENT, 700, controllers));
    }
    for (const controller of controllers) for (const line of controller.errors.slice(0, 5)) say(`  controller error: ${line}`);
  } finally {
    for (const controller of controllers) await controller.stop();
    await servers.stop();
  }
  const peer = EMMETT ? emmettCommands() : { why: 'BENCH_EMMETT=0' };

  print(`\nsigned operator commands through the controller (${count(mesh.history.events)}-event log of a 1,000-node mesh; nats-server 2.9 and PostgreSQL 15 on this machine)\n`);
  print(`| run | commands | carried out | in the log | failed | seconds | commands/s | p50 ms | p99 ms | controller CPU ms/command |`);
  print(`|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|`);
  for (const run of runs) {
    const failed = [...run.failed.values()].reduce((sum, kind) => sum + kind.n, 0);
    print(`| ${[run.label, count(run.commands), count(run.carriedOut), count(run.logged), count(failed), run.seconds.toFixed(1), count(rate(run)), (percentile(run.latencies, 0.5) * 1e3).toFixed(1), (percentile(run.latencies, 0.99) * 1e3).toFixed(1), run.carriedOut > 0 ? ((run.controllerCpuSeconds * 1e3) / run.carriedOut).toFixed(2) : '–'].join(' | ')} |`);
  }
  if (peer.rate !== undefined) print(`| (c) Emmett CommandHandler on PostgreSQL (its run: below) | | | | | | ${count(peer.rate)} | | | |`);
  const perCommand = (run: Run, seconds: number): string => (run.carriedOut > 0 ? ((seconds * 1e3) / run.carriedOut).toFixed(2) : '–');
  print(`\nCPU ms per command carried out, by part (the machine: every process on it, ${availableParallelism()} cores)\n`);
  print(`| run | controllers | nats-server | PostgreSQL | clients (this process) | the machine |`);
  print(`|---|---:|---:|---:|---:|---:|`);
  for (const run of runs) print(`| ${[run.label, perCommand(run, run.controllerCpuSeconds), perCommand(run, run.cpu.natsServer), perCommand(run, run.cpu.postgres), perCommand(run, run.cpu.clients), perCommand(run, run.cpu.machine)].join(' | ')} |`);
  for (const run of runs) {
    print(`\n${run.label}:`);
    for (const [kind, { n, example }] of [...run.failed].sort((a, b) => b[1].n - a[1].n)) print(`  failed ${count(n)} × ${kind}${n > 1 ? `\n    e.g. ${example}` : ''}`);
    if (run.loggedThoughFailed > 0) print(`  ${count(run.loggedThoughFailed)} commands answered as failed are in the log all the same`);
    if (run.missing > 0) print(`  ${count(run.missing)} commands answered as carried out are not in the log`);
    for (const [kind, n] of [...run.ownCommits].sort((a, b) => b[1] - a[1])) print(`  the controller's own commits meanwhile: ${count(n)} × ${kind}`);
  }
  const rateOf = (label: string): number | undefined => {
    const run = runs.find((r) => r.label.startsWith(label));
    return run ? rate(run) : undefined;
  };
  const [sequential, concurrent, racing] = [rateOf('(a)'), rateOf('(b)'), rateOf('(d)')];
  print('');
  if (sequential && concurrent) print(`(b) ÷ (a), concurrent ÷ sequential: ${(concurrent / sequential).toFixed(2)} (target ≥ 3.00)`);
  if (concurrent && peer.rate) print(`(b) ÷ (c), ours ÷ Emmett's CommandHandler: ${(concurrent / peer.rate).toFixed(2)} (target ≥ 2.00)  [${peer.label}]`);
  // What the target leaves for the control plane on this machine: every process here shares its cores.
  const b = runs.find((run) => run.label.startsWith('(b)'));
  if (b && b.carriedOut > 0 && peer.rate) {
    const budgetMs = (availableParallelism() * 1e3) / (2 * peer.rate);
    const aroundMs = ((b.cpu.clients + b.cpu.natsServer) * 1e3) / b.carriedOut;
    const crypto = ed25519Micros();
    print(
      `    at 2 × Emmett (${count(2 * peer.rate)} commands/s) the machine has ${budgetMs.toFixed(2)} ms of CPU per command for everything on it; in (b) the 32 clients and nats-server alone used ${aroundMs.toFixed(2)} ms, ` +
        `leaving ${(budgetMs - aroundMs).toFixed(2)} ms for the controller and PostgreSQL, which used ${(((b.controllerCpuSeconds + b.cpu.postgres) * 1e3) / b.carriedOut).toFixed(2)} ms; ` +
        `native Ed25519 here: ${crypto.sign.toFixed(0)} µs to sign, ${crypto.verify.toFixed(0)} µs to verify (a command needs two signatures and a verification: ${((2 * crypto.sign + crypto.verify) / 1e3).toFixed(2)} ms)`,
    );
  }
  else print(`(c) Emmett: no figure (${peer.why})`);
  if (concurrent && racing) print(`(d) ÷ (b), two controllers on one log ÷ one alone: ${(racing / concurrent).toFixed(2)} (target ≥ 0.80)`);
};

await runAsFolding(main);
