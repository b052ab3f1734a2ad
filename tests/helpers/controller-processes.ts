import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import pg from 'pg';
import { writePrivateJson } from '../../src/adapters/key-files.js';
import { createOperatorKey, signCommand, type OperatorKey } from '../../src/adapters/operator-keys.js';
import { meshHome, projectRoot } from '../../src/config.js';
import { toolSubject, type ToolAnswer } from '../../src/controller/tool-server.js';
import { freePort } from '../../src/dev/ports.js';
import { FOLDING_NODE_FLAGS } from '../../src/projections/runtime.js';
import { WRITER_PARTS_RUNNING, WRITER_SERVING, WRITER_TAKEN } from '../../src/controller/writer-lines.js';
import type { StoredMeshEvent } from '../../src/domain/registry.js';
import { dropSchemas, freshSchemas } from '../projections/harness.js';
import { testDatabaseUrl } from './database.js';
import { testNatsUrl } from './log.js';
import { uniqueName } from './names.js';
import { openTestMesh, waitFor, type TestMesh } from './test-mesh.js';

// `mesh controller` processes on one test mesh of their own: its controller key in a folder of the
// test's, an operator `ada` whose signed commands they decide, and their JSON log lines kept to
// read who is the writer. For the tests of more than one controller (tests/controller, tests/faults).

export interface LogLine {
  level: number;
  time?: number;
  msg: string;
}

export interface ControllerProcess {
  child: ChildProcess;
  lines: LogLine[];
  httpPort: number;
  /** when (epoch ms, its own log's time) it said it had taken the lease; undefined while it has not */
  writerSince: () => number | undefined;
  /** when it said it served commands as the writer (its parts started after taking the lease) */
  servingSince: () => number | undefined;
  /** when it said every part of a writer (declarations, reports, builds…) was running, not only commands */
  writingSince: () => number | undefined;
  exited: Promise<number | null>;
}


/** `url` and `replicas`: a bus of the test's own (a scratch cluster) instead of the test stack's. */
export const openControllersMesh = async (settings: { leaseMs: number; env?: Record<string, string>; url?: string; replicas?: number }) => {
  const t: TestMesh = await openTestMesh({ ...(settings.url ? { url: settings.url } : {}), ...(settings.replicas ? { replicas: settings.replicas } : {}) });
  const dir = join(meshHome(), 'tmp', uniqueName('writers-'));
  mkdirSync(dir, { recursive: true });
  writePrivateJson(join(dir, 'controller.key'), t.controllerKey);
  const ada: OperatorKey = createOperatorKey(join(dir, 'operator.key'), 'ada');
  await t.mesh.execute({ type: 'add-operator', operator: 'ada', publicKey: ada.publicKey }, { commandId: uniqueName('genesis'), actor: 'genesis' });
  const schemas = freshSchemas();
  const processes: ControllerProcess[] = [];

  /** Where this mesh is: its bus, streams, subjects, schemas and controller key, as every process of it is told. */
  const meshEnv = (): Record<string, string> => ({
    MESH_NATS_URL: settings.url ?? testNatsUrl(),
    MESH_SUBJECT_PREFIX: t.names.prefix,
    MESH_LOG_STREAM: t.names.logStream,
    MESH_LOG_SUBJECT_PREFIX: t.names.logPrefix,
    MESH_NODES_STREAM: t.names.nodesStream,
    MESH_CONTROL_STREAM: t.names.controlStream,
    MESH_PROJECTOR_SCHEMA: schemas.control,
    MESH_READ_SCHEMA: schemas.read,
    MESH_CONTROLLER_SCHEMA: `status_${t.names.prefix}`,
    MESH_CONTROLLER_KEY: join(dir, 'controller.key'),
  });

  /** `wrap`: the command it runs under (e.g. `ip netns exec NS`); `env`: this process's own settings over the mesh's. */
  const start = async (own: { wrap?: string[]; env?: Record<string, string> } = {}): Promise<ControllerProcess> => {
    const httpPort = await freePort();
    const env = {
      ...meshEnv(),
      MESH_DATABASE_URL: process.env.MESH_DATABASE_URL ?? '',
      MESH_NAME: t.names.prefix,
      MESH_HTTP_PORT: String(httpPort),
      MESH_WRITER_LEASE_MS: String(settings.leaseMs),
      ...settings.env,
      ...own.env,
    };
    const [program, ...args] = [...(own.wrap ?? []), process.execPath, ...FOLDING_NODE_FLAGS, join(projectRoot, 'bin', 'mesh.js'), 'controller'];
    const child = spawn(program!, args, { cwd: projectRoot, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const lines: LogLine[] = [];
    createInterface({ input: child.stdout as NonNullable<ChildProcess['stdout']> }).on('line', (line) => {
      try {
        lines.push(JSON.parse(line) as LogLine);
      } catch {
        lines.push({ level: 30, msg: line });
      }
    });
    const writerSince = () => {
      const taken = lines.find((l) => l.msg === WRITER_TAKEN);
      return taken ? (taken.time ?? 0) : undefined;
    };
    const servingSince = () => lines.find((l) => l.msg === WRITER_SERVING)?.time;
    const writingSince = () => lines.find((l) => l.msg === WRITER_PARTS_RUNNING)?.time;
    const started = { child, lines, httpPort, writerSince, servingSince, writingSince, exited };
    processes.push(started);
    await waitFor('the controller started', async () => (lines.some((l) => l.msg === 'controller started') ? true : undefined), 90_000);
    return started;
  };

  const send = async (commandId: string, command: Record<string, unknown>, timeoutMs = 30_000): Promise<ToolAnswer> =>
    (await t.nc.request(toolSubject(String(command.type), t.names.prefix), JSON.stringify(signCommand(ada, commandId, command, new Date())), { timeout: timeoutMs })).json<ToolAnswer>();

  const logEvents = async (): Promise<StoredMeshEvent[]> => {
    const events: StoredMeshEvent[] = [];
    for await (const event of t.newLog().read()) events.push(event);
    return events;
  };

  const close = async (): Promise<void> => {
    for (const { child } of processes) child.kill('SIGKILL');
    await t.close();
    const pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 1 });
    await dropSchemas(pool, schemas);
    await pool.end();
    rmSync(dir, { recursive: true, force: true });
  };

  /** The environment a `mesh` child process reads this mesh with and sends ada's commands in. */
  const cliEnv = (): Record<string, string> => ({ ...meshEnv(), MESH_OPERATOR_KEY: join(dir, 'operator.key') });

  return { t, ada, start, send, logEvents, close, processes, cliEnv, schemas };
};

export const isWriter = (p: Pick<ControllerProcess, 'writerSince'>): boolean => p.writerSince() !== undefined;
