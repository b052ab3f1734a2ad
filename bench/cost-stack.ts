import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import pg from 'pg';
import { sendSignedCommand, type CommandAnswer } from '../src/adapters/command-client.js';
import { databaseUrlFor } from '../src/adapters/database-logins.js';
import { assertLogStream } from '../src/adapters/eventlog/log-stream.js';
import { newIdentity } from '../src/adapters/identity.js';
import { writePrivateJson } from '../src/adapters/key-files.js';
import { connectNats } from '../src/adapters/nats/connect.js';
import { assertControlStreams } from '../src/adapters/nats/control-streams.js';
import { createOperatorKey } from '../src/adapters/operator-keys.js';
import { connectAsOperator } from '../src/cli/bus-connection.js';
import { loadConfig, meshHome, projectRoot } from '../src/config.js';
import { startNatsServer, stopNatsServer } from '../src/dev/nats-server.js';
import { startPostgres, stopPostgres } from '../src/dev/postgres.js';
import type { MeshCommand } from '../src/domain/mesh/commands.js';
import { meshEventRegistry } from '../src/domain/registry.js';
import { meshProjections } from '../src/projections/catalogue.js';
import { Projector } from '../src/projections/projector.js';
import { FOLDING_NODE_FLAGS } from '../src/projections/runtime.js';
import { MeshError, UnavailableError } from '../src/errors.js';
import { writeMeshHistory, type MeshHistory } from './mesh-history.js';

// What the benchmarks of the control plane's cost share: servers of their own on ports of their
// own, meshes of a given history written straight into fresh streams, the real `mesh controller`
// process started on one, and operators sending it signed commands as the CLI does.
//
// Ports (env): MESH_TEST_NATS_PORT 44222, MESH_TEST_PG_PORT 45432,
// MESH_TEST_HTTP_PORT 48081 (a second controller takes the next one).

export const say = (text: string): void => void process.stderr.write(`${text}\n`);
export const print = (text: string): void => void process.stdout.write(`${text}\n`);
export const count = (n: number): string => Math.round(n).toLocaleString('en');
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
export const now = (): number => Number(process.hrtime.bigint()) / 1e9;

const port = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);

export const BENCH_PORTS = {
  nats: port('MESH_TEST_NATS_PORT', 44222),
  postgres: port('MESH_TEST_PG_PORT', 45432),
  http: port('MESH_TEST_HTTP_PORT', 48081),
};

/** What is stopped when the bench is interrupted (Ctrl-C, a closed pipe): its controllers, then its servers. */
const cleanups = new Set<() => Promise<void>>();
const liveChildren = new Set<ChildProcess>();
let interrupted = false;
const interrupt = (): void => {
  if (interrupted) return;
  interrupted = true;
  for (const child of liveChildren) child.kill('SIGKILL');
  void Promise.allSettled([...cleanups].map((cleanup) => cleanup())).finally(() => process.exit(130));
};
process.once('SIGINT', interrupt);
process.once('SIGTERM', interrupt);
process.stdout.on('error', interrupt);
process.stderr.on('error', interrupt);
process.once('exit', () => {
  for (const child of liveChildren) child.kill('SIGKILL');
});

export interface BenchServers {
  dir: string;
  natsUrl: string;
  databaseUrl: string;
  nc: NatsConnection;
  projectorUrl: string;
  stop(): Promise<void>;
}

export const startBenchServers = async (name: string): Promise<BenchServers> => {
  const dir = join(meshHome(), 'tmp', `bench-${name}-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  const nats = { dir: join(dir, 'nats'), port: BENCH_PORTS.nats };
  const postgres = { dir: join(dir, 'postgres'), port: BENCH_PORTS.postgres, secretsDir: join(dir, 'secrets') };
  const natsStatus = await startNatsServer(nats);
  let pgStarted = false;
  try {
    const pgStatus = await startPostgres(postgres);
    pgStarted = true;
    const nc = await connectNats(natsStatus.url, { name: `bench-${name}` });
    const stop = async (): Promise<void> => {
      cleanups.delete(stop);
      await nc.close().catch(() => undefined);
      await stopNatsServer(nats, 'SIGKILL');
      await stopPostgres(postgres);
      rmSync(dir, { recursive: true, force: true });
    };
    cleanups.add(stop);
    return {
      dir,
      natsUrl: natsStatus.url,
      databaseUrl: pgStatus.url,
      nc,
      projectorUrl: databaseUrlFor('projector', { databaseUrl: pgStatus.url, secretsDir: postgres.secretsDir }, {}),
      stop,
    };
  } catch (error) {
    await stopNatsServer(nats, 'SIGKILL');
    if (pgStarted) await stopPostgres(postgres);
    throw error;
  }
};

export interface BenchMesh {
  name: string;
  history: MeshHistory;
  /** the environment a `mesh` process (the controller, the CLI) reads this mesh with */
  env: Record<string, string>;
  foldSeconds: number;
}

/**
 * A mesh of its own names whose log holds `events` events of a 1,000-node mesh, signed by a
 * controller key written beside it, with an operator `ada`; with `fold`, its projections are
 * folded to the head first (untimed), as a running mesh's are when its controller restarts.
 */
export const prepareMesh = async (servers: BenchServers, name: string, events: number, options: { fold?: boolean; nodes?: number } = {}): Promise<BenchMesh> => {
  const names = { logStream: `LOG_${name}`, logPrefix: `${name}.log`, nodesStream: `NODES_${name}`, controlStream: `CONTROL_${name}`, prefix: name };
  const schemas = { control: `projector_${name}`, read: `mesh_${name}` };
  const jsm = await jetstreamManager(servers.nc);
  await assertLogStream(jsm, { stream: names.logStream, subjectPrefix: names.logPrefix });
  await assertControlStreams(jsm, { nodes: names.nodesStream, control: names.controlStream, prefix: names.prefix });
  const keyDir = join(servers.dir, name);
  mkdirSync(keyDir, { recursive: true });
  const controllerKey = newIdentity();
  const controllerKeyFile = join(keyDir, 'controller.key');
  writePrivateJson(controllerKeyFile, controllerKey);
  const operatorKeyFile = join(keyDir, 'operator.key');
  const operator = createOperatorKey(operatorKeyFile, 'ada');

  say(`${name}: writing a log of ${count(events)} events of a ${count(options.nodes ?? 1_000)}-node mesh, signed and chained…`);
  const history = await writeMeshHistory(servers.nc, {
    stream: names.logStream,
    subjectPrefix: names.logPrefix,
    meshName: name,
    key: controllerKey,
    operator: { name: operator.operator, publicKey: operator.publicKey },
    events,
    ...(options.nodes !== undefined ? { nodes: options.nodes } : {}),
    progress: (done, seconds) => say(`  … ${count(done)} events in ${seconds.toFixed(1)} s (${count(done / seconds)}/s)`),
  });
  say(`  ${count(history.events)} events in ${count(history.commits)} commits, written in ${history.seconds.toFixed(1)} s (${count(history.events / history.seconds)} events/s)`);

  let foldSeconds = 0;
  if (options.fold ?? true) {
    say(`  folding it into every projection first, as a running mesh's are (not timed as a start)…`);
    const started = now();
    const pool = new pg.Pool({ connectionString: servers.projectorUrl, max: 2 });
    const projector = new Projector({ databaseUrl: servers.projectorUrl, nc: servers.nc, log: { stream: names.logStream, subjectPrefix: names.logPrefix, registry: meshEventRegistry() }, projections: meshProjections(), schemas, planIntervalMs: 500 });
    const projections = meshProjections().length;
    await projector.start();
    let told = now();
    for (;;) {
      const { rows } = await pool.query<{ n: number; slowest: number | null }>(`SELECT count(*) FILTER (WHERE status = 'serving' AND checkpoint >= $1)::int AS n, min(checkpoint)::int AS slowest FROM "${schemas.control}".builds`, [history.commits]);
      if ((rows[0]?.n ?? 0) === projections) break;
      if (now() - told > 30) {
        told = now();
        say(`  … the slowest projection at commit ${count(rows[0]?.slowest ?? 0)} of ${count(history.commits)}, ${(told - started).toFixed(0)} s`);
      }
      await sleep(250);
    }
    await projector.stop();
    await pool.end();
    foldSeconds = now() - started;
    say(`  folded in ${foldSeconds.toFixed(1)} s`);
  }
  return {
    name,
    history,
    foldSeconds,
    env: {
      MESH_NATS_URL: servers.natsUrl,
      MESH_DATABASE_URL: servers.databaseUrl,
      // the stack's folder: its secrets/ holds the PostgreSQL passwords
      MESH_DEV_DIR: servers.dir,
      MESH_NAME: name,
      MESH_LOG_STREAM: names.logStream,
      MESH_LOG_SUBJECT_PREFIX: names.logPrefix,
      MESH_SUBJECT_PREFIX: names.prefix,
      MESH_NODES_STREAM: names.nodesStream,
      MESH_CONTROL_STREAM: names.controlStream,
      MESH_PROJECTOR_SCHEMA: schemas.control,
      MESH_READ_SCHEMA: schemas.read,
      MESH_CONTROLLER_SCHEMA: `status_${name}`,
      MESH_CONTROLLER_KEY: controllerKeyFile,
      MESH_OPERATOR_KEY: operatorKeyFile,
      MESH_ACTOR: 'operator:ada',
    },
  };
};

/** The environment of a child process: this one's, without any MESH_ setting that is not the mesh's given here. */
const childEnv = (env: Record<string, string>): NodeJS.ProcessEnv => ({
  ...Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('MESH_'))),
  ...env,
});

/** `mesh` runs from dist/, built here if a source is newer (scripts/build-cli.js), before anything is timed. */
export const buildCli = (): void => {
  const run = spawnSync(process.execPath, [join(projectRoot, 'scripts', 'build-cli.js'), '--if-stale'], { stdio: 'inherit' });
  if (run.status !== 0) throw new Error(`scripts/build-cli.js exited ${run.status}`);
};

export interface ControllerProcess {
  child: ChildProcess;
  pid: number;
  /** when it was spawned (now()) */
  spawnedAt: number;
  /** when (now()) the controller first said each of its log lines, by message */
  said: Map<string, number>;
  errors: string[];
  /** resident and peak resident memory now, in MiB (from /proc) */
  memory(): { rssMiB: number; peakMiB: number };
  stop(): Promise<void>;
}

/** `mesh controller` as `mesh dev up` runs it (node with the folding flags, the bundled CLI), on this mesh. */
export const startControllerProcess = (mesh: BenchMesh, httpPort: number): ControllerProcess => {
  const spawnedAt = now();
  // BENCH_CPU_PROF=DIR: each controller writes a CPU profile there when it stops (where its time went).
  const profile = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const child = spawn(process.execPath, [...FOLDING_NODE_FLAGS, ...profile, join(projectRoot, 'bin', 'mesh.js'), 'controller'], {
    cwd: projectRoot,
    env: childEnv({ ...mesh.env, MESH_HTTP_PORT: String(httpPort) }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (child.pid === undefined) throw new Error('the controller did not start');
  liveChildren.add(child);
  const said = new Map<string, number>();
  const errors: string[] = [];
  createInterface({ input: child.stdout as NonNullable<ChildProcess['stdout']> }).on('line', (line) => {
    const at = now();
    try {
      const parsed = JSON.parse(line) as { msg?: string; level?: number };
      const msg = parsed.msg ?? '';
      if (!said.has(msg)) said.set(msg, at);
      if ((parsed.level ?? 0) >= 50) errors.push(line.slice(0, 400));
    } catch {
      errors.push(line.slice(0, 400));
    }
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4_000)));
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      liveChildren.delete(child);
      resolve();
    }),
  );
  const pid = child.pid;
  return {
    child,
    pid,
    spawnedAt,
    said,
    errors,
    memory: () => {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const kib = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
      return { rssMiB: kib('VmRSS') / 1024, peakMiB: kib('VmHWM') / 1024 };
    },
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) {
        if (child.exitCode !== 0) say(`  the controller had exited (${child.exitCode ?? child.signalCode}): ${stderr.trim()}`);
        return;
      }
      child.kill('SIGTERM');
      const stopped = await Promise.race([exited.then(() => true), sleep(15_000).then(() => false)]);
      if (!stopped) {
        child.kill('SIGKILL');
        await exited;
      }
    },
  };
};

/** An operator as the CLI is one: connected as itself, sending commands signed with its key to the controller's tools. */
export interface Operator {
  send(command: MeshCommand, commandId: string): Promise<CommandAnswer>;
  close(): Promise<void>;
}

export const connectOperator = async (mesh: BenchMesh, name = 'bench-operator'): Promise<Operator> => {
  const config = loadConfig(childEnv(mesh.env));
  const nc = await connectAsOperator(config, name);
  return {
    send: (command, commandId) => sendSignedCommand(nc, config, command, commandId),
    close: () => nc.close(),
  };
};

/** The log's last sequence. */
export const logHead = async (servers: BenchServers, mesh: BenchMesh): Promise<number> => (await (await jetstreamManager(servers.nc)).streams.info(mesh.env.MESH_LOG_STREAM as string)).state.last_seq;

/**
 * Sends `command` until a controller answers it (no controller serving the tool yet, or one that
 * did not answer in time, is asked again every 25 ms, under the same command id so it is carried
 * out once); returns the answer and when it came.
 */
export const sendUntilAnswered = async (operator: Operator, command: MeshCommand, commandId: string, controller: ControllerProcess, timeoutS: number): Promise<{ answer: CommandAnswer; at: number }> => {
  for (;;) {
    if (controller.child.exitCode !== null) throw new Error(`the controller exited with ${controller.child.exitCode} before answering: ${controller.errors.join('\n')}`);
    if (now() - controller.spawnedAt > timeoutS) throw new Error(`no answer ${timeoutS} s after the controller was spawned`);
    try {
      const answer = await operator.send(command, commandId);
      return { answer, at: now() };
    } catch (error) {
      // not serving yet, or standing by while the writer is not answering yet: asked again
      if (!(error instanceof UnavailableError) && !(error instanceof MeshError && error.code === 'unavailable')) throw error;
      await sleep(25);
    }
  }
};

export interface LoggedCommit {
  seq: number;
  aggregate: string;
  commandId: string;
  actor: string;
  types: string[];
}

/** The commits the log holds from `fromSeq` to `toSeq`, as their envelopes name them. */
export const commitsBetween = async (servers: BenchServers, mesh: BenchMesh, fromSeq: number, toSeq: number): Promise<LoggedCommit[]> => {
  const commits: LoggedCommit[] = [];
  if (toSeq < fromSeq) return commits;
  const consumer = await jetstream(servers.nc).consumers.get(mesh.env.MESH_LOG_STREAM as string, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: fromSeq });
  const messages = await consumer.consume({ max_messages: 1_000 });
  for await (const message of messages) {
    const commit = message.json<{ events: { aggregate: string; commandId: string; actor: string; type: string }[] }>();
    const first = commit.events[0];
    commits.push({ seq: message.seq, aggregate: first?.aggregate ?? '', commandId: first?.commandId ?? '', actor: first?.actor ?? '', types: commit.events.map((e) => e.type) });
    if (message.seq >= toSeq) break;
  }
  messages.stop();
  return commits;
};
