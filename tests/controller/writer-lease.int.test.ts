import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
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
import type { StoredMeshEvent } from '../../src/domain/registry.js';
import { testDatabaseUrl } from '../helpers/database.js';
import { testNatsUrl } from '../helpers/log.js';
import { uniqueName } from '../helpers/names.js';
import { openTestMesh, waitFor, type TestMesh } from '../helpers/test-mesh.js';
import { dropSchemas, freshSchemas } from '../projections/harness.js';

// Two `mesh controller` processes on one mesh: one is the writer (it holds the lease), the other
// stands by, serving reads and passing the commands it is sent on to the writer. Commands sent to
// either land once each. When the writer is killed, the other takes the lease within the lease's
// time and carries on; a command acknowledged before is not done again when retried.

interface LogLine {
  level: number;
  msg: string;
}

const LEASE_MS = 3_000;

describe('one writer among controller processes', () => {
  let t: TestMesh;
  let ada: OperatorKey;
  let dir: string;
  const schemas = freshSchemas();
  const processes: { child: ChildProcess; lines: LogLine[]; httpPort: number }[] = [];

  const startController = async (): Promise<{ child: ChildProcess; lines: LogLine[]; httpPort: number }> => {
    const httpPort = await freePort();
    const env = {
      MESH_NATS_URL: testNatsUrl(),
      MESH_DATABASE_URL: process.env.MESH_DATABASE_URL ?? '',
      MESH_NAME: t.names.prefix,
      MESH_SUBJECT_PREFIX: t.names.prefix,
      MESH_LOG_STREAM: t.names.logStream,
      MESH_LOG_SUBJECT_PREFIX: t.names.logPrefix,
      MESH_NODES_STREAM: t.names.nodesStream,
      MESH_CONTROL_STREAM: t.names.controlStream,
      MESH_PROJECTOR_SCHEMA: schemas.control,
      MESH_READ_SCHEMA: schemas.read,
      MESH_CONTROLLER_SCHEMA: `status_${t.names.prefix}`,
      MESH_CONTROLLER_KEY: join(dir, 'controller.key'),
      MESH_HTTP_PORT: String(httpPort),
      MESH_WRITER_LEASE_MS: String(LEASE_MS),
    };
    const child = spawn(process.execPath, [...FOLDING_NODE_FLAGS, join(projectRoot, 'bin', 'mesh.js'), 'controller'], { cwd: projectRoot, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
    const lines: LogLine[] = [];
    createInterface({ input: child.stdout as NonNullable<ChildProcess['stdout']> }).on('line', (line) => {
      try {
        lines.push(JSON.parse(line) as LogLine);
      } catch {
        lines.push({ level: 30, msg: line });
      }
    });
    const started = { child, lines, httpPort };
    processes.push(started);
    await waitFor('the controller started', async () => (lines.some((l) => l.msg === 'controller started') ? true : undefined), 60_000);
    return started;
  };

  const isWriter = (p: { lines: LogLine[] }): boolean => p.lines.some((l) => l.msg === 'this controller is the mesh writer');
  const send = async (commandId: string, command: Record<string, unknown>): Promise<ToolAnswer> =>
    (await t.nc.request(toolSubject(String(command.type), t.names.prefix), JSON.stringify(signCommand(ada, commandId, command, new Date())), { timeout: 30_000 })).json<ToolAnswer>();
  const logEvents = async (): Promise<StoredMeshEvent[]> => {
    const events: StoredMeshEvent[] = [];
    for await (const event of t.newLog().read()) events.push(event);
    return events;
  };

  beforeAll(async () => {
    t = await openTestMesh();
    dir = join(meshHome(), 'tmp', uniqueName('writers-'));
    mkdirSync(dir, { recursive: true });
    writePrivateJson(join(dir, 'controller.key'), t.controllerKey);
    ada = createOperatorKey(join(dir, 'operator.key'), 'ada');
    await t.mesh.execute({ type: 'add-operator', operator: 'ada', publicKey: ada.publicKey }, { commandId: uniqueName('genesis'), actor: 'genesis' });
  });

  afterAll(async () => {
    for (const { child } of processes) child.kill('SIGKILL');
    await t.close();
    const pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 1 });
    await dropSchemas(pool, schemas);
    await pool.end();
    rmSync(dir, { recursive: true, force: true });
  });

  it('has one writer; commands sent to either controller land once each; the other takes over when the writer is killed', async () => {
    const first = await startController();
    const second = await startController();
    await waitFor('one of them the writer', async () => (isWriter(first) || isWriter(second) ? true : undefined), 30_000);
    const [writer, standby] = isWriter(first) ? [first, second] : [second, first];
    expect(isWriter(standby)).toBe(false);
    await waitFor('the other standing by', async () => (standby.lines.some((l) => l.msg.startsWith('standing by')) ? true : undefined), 30_000);

    // Sixty commands at once, spread by the bus over both controllers' queue group.
    const commands = Array.from({ length: 60 }, () => ({ commandId: uniqueName('c'), node: uniqueName('n') }));
    const answers = await Promise.all(commands.map(({ commandId, node }) => send(commandId, { type: 'add-node', node })));
    expect(answers.filter((a) => !a.ok)).toEqual([]);
    let events = await logEvents();
    for (const { commandId } of commands) expect(events.filter((e) => e.commandId === commandId)).toHaveLength(1);

    // A command over the standby's HTTP API is decided by the writer too: the writer counts it, the standby does not.
    const decidedBy = async (p: { httpPort: number }): Promise<number> => {
      const text = await (await fetch(`http://127.0.0.1:${p.httpPort}/metrics`)).text();
      return Number(/^mesh_commands_total\{verb="add-node",outcome="ok"\} (\d+)$/m.exec(text)?.[1] ?? 0);
    };
    const [writerBefore, standbyBefore] = [await decidedBy(writer), await decidedBy(standby)];
    const viaHttp = { commandId: uniqueName('h'), node: uniqueName('http') };
    const response = await fetch(`http://127.0.0.1:${standby.httpPort}/api/tools/add-node`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(signCommand(ada, viaHttp.commandId, { type: 'add-node', node: viaHttp.node }, new Date())),
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ ok: true, duplicate: false });
    events = await logEvents();
    expect(events.filter((e) => e.commandId === viaHttp.commandId)).toHaveLength(1);
    expect(await decidedBy(writer)).toBe(writerBefore + 1);
    expect(await decidedBy(standby)).toBe(standbyBefore);

    // The writer dies; the other takes the lease once the last renewal expires.
    const killedAt = Date.now();
    writer.child.kill('SIGKILL');
    await waitFor('the standby became the writer', async () => (isWriter(standby) ? true : undefined), 30_000);
    const takeoverMs = Date.now() - killedAt;
    process.stdout.write(`writer takeover after SIGKILL: ${takeoverMs} ms (lease ${LEASE_MS} ms)\n`);
    expect(takeoverMs).toBeLessThan(LEASE_MS * 2 + 2_000);

    // A command acknowledged before is answered, not done again; a new one is carried out.
    const retried = await send(commands[0]!.commandId, { type: 'add-node', node: commands[0]!.node });
    expect(retried).toMatchObject({ ok: true, duplicate: true });
    const after = await send(uniqueName('c'), { type: 'add-node', node: uniqueName('after') });
    expect(after).toMatchObject({ ok: true, duplicate: false });
    events = await logEvents();
    expect(events.filter((e) => e.commandId === commands[0]!.commandId)).toHaveLength(1);
  });
});
