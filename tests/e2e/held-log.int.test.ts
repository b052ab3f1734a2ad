import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { jetstream } from '@nats-io/jetstream';
import pg from 'pg';
import { linkOf, sealHeaders } from '../../src/adapters/eventlog/chain.js';
import { rawOf } from '../../src/adapters/eventlog/chain-reader.js';
import { encodeCommit } from '../../src/adapters/eventlog/codec.js';
import { newIdentity } from '../../src/adapters/identity.js';
import { projectRoot } from '../../src/config.js';
import { freePort } from '../../src/dev/ports.js';
import { FOLDING_NODE_FLAGS } from '../../src/projections/runtime.js';
import type { Commit } from '../../src/domain/events/envelope.js';
import { catchUpToolSubject, START } from '../../src/domain/facts/catch-up.js';
import { runMesh } from '../helpers/cli.js';
import { testDatabaseUrl } from '../helpers/database.js';
import { testNatsUrl } from '../helpers/log.js';
import { uniqueName } from '../helpers/names.js';
import { openTestMesh, waitFor, type TestMesh } from '../helpers/test-mesh.js';
import { dropSchemas, freshSchemas } from '../projections/harness.js';

// The attacks that stopped the mesh, against a real `mesh controller` process: twenty bytes that
// are not JSON on a subject of the log, and a well-formed commit signed with a key that is not the
// controller's. Neither crashes anything. Every reader stops at it and says so — the controller's
// fold, the build coordinator, the fact feed, the catch-up tool, the projector, `mesh log`,
// `mesh history` — the controller keeps answering reads and refuses commands naming the sequence,
// and `mesh status` exits non-zero naming it. Once an operator voids it, every one of them passes
// it by, saying so.

interface LogLine {
  level: number;
  msg: string;
  component?: string;
  seq?: number;
}

interface OverviewBody {
  healthy: boolean;
  problems: string[];
  held: { reader: string; seq: number; problem: string }[];
}

describe('a commit that does not verify holds every reader, visibly, until an operator voids it', () => {
  let t: TestMesh;
  let env: Record<string, string>;
  let controller: ChildProcess;
  let httpPort: number;
  let pool: pg.Pool;
  const schemas = freshSchemas();
  const lines: LogLine[] = [];

  const overview = async (): Promise<OverviewBody> => (await (await fetch(`http://127.0.0.1:${httpPort}/api/overview`)).json()) as OverviewBody;
  const saidOf = (seq: number, pattern: RegExp): LogLine[] => lines.filter((line) => pattern.test(line.msg) && line.msg.includes(`seq ${seq}`));
  const head = async (): Promise<number> => (await t.jsm.streams.info(t.names.logStream)).state.last_seq;
  const catchUp = async () => (await t.nc.request(catchUpToolSubject(t.names.prefix), JSON.stringify({ asker: 'test', after: START }), { timeout: 10_000 })).json<{ ok: boolean; passed?: { seq: number }[]; refused?: { why: string }[] }>();

  /** Every reader held at `seq`, each saying so, and nothing crashed. */
  const heldEverywhere = async (seq: number): Promise<void> => {
    const body = await waitFor(
      `the controller's readers held at seq ${seq}`,
      async () => {
        const o = await overview();
        const readers = o.held.filter((h) => h.seq === seq).map((h) => h.reader);
        // One view of the mesh per controller process: its commands, declarations and builds are held with it.
        return readers.includes('the controller') ? o : undefined;
      },
      60_000,
    );
    // Still serving reads, and naming the sequence as a problem.
    expect(body.healthy).toBe(false);
    expect(body.problems[0]).toContain(`at seq ${seq}`);
    expect(body.problems[0]).toContain(`mesh log void ${seq}`);
    expect(controller.exitCode).toBeNull();
    // Said once, at error level, by the controller's one view (its commands, declarations and builds read it).
    expect(saidOf(seq, /holds the controller at/).filter((l) => l.level === 50)).toHaveLength(1);
    // The projector: a stall at that sequence, and `mesh status` exits non-zero naming it.
    await waitFor(`the projector stalled at seq ${seq}`, async () => (await pool.query(`SELECT 1 FROM ${schemas.control}.builds WHERE stalled_seq = $1`, [seq])).rowCount ?? 0, 60_000);
    const status = await runMesh(['status', '-o', 'wide'], env);
    expect(status.code).toBe(1);
    expect(status.stdout).toContain(`at seq ${seq}`);
    // `mesh log` refuses, exit 7, naming the sequence and why.
    const log = await runMesh(['log'], env);
    expect(log.code).toBe(7);
    expect(log.stderr).toContain(`seq ${seq}`);
    expect(log.stderr).toContain(`mesh log void ${seq}`);
    // A command is refused while the fold is held, naming the sequence.
    const command = await runMesh(['node', 'add', uniqueName('lab')], env);
    expect(command.code).toBe(3);
    expect(command.stderr).toContain(`log seq ${seq}`);
  };

  /** Every reader passes `seq` by, each saying so. */
  const passedEverywhere = async (seq: number): Promise<void> => {
    await waitFor(`the controller's readers past seq ${seq}`, async () => ((await overview()).held.length === 0 ? true : undefined), 90_000);
    await waitFor(`every reader said it passed seq ${seq}`, async () => {
      const said = saidOf(seq, /^passing seq/).map((l) => l.component);
      return ['controller', 'projector'].every((c) => said.includes(c)) ? true : undefined;
    }, 90_000);
    let last: unknown;
    await waitFor(`the projections past seq ${seq}`, async () => {
      const result = await runMesh(['log'], env);
      last = { code: result.code, stderr: result.stderr };
      return result.code === 0 ? true : undefined;
    }, 90_000).catch((error: Error) => {
      throw new Error(`${error.message}; mesh log last said ${JSON.stringify(last)}`);
    });
    const log = await runMesh(['log'], env);
    expect(log.stdout).toMatch(new RegExp(`^${seq}\\s+VOIDED, passed by .* voided at seq \\d+ .*operator:ada`, 'm'));
    const wide = await runMesh(['log', '-o', 'wide'], env);
    expect(wide.stdout).toMatch(new RegExp(`^${seq}\\s+VOIDED .* voided at seq \\d+ .*operator:ada .*passed by`, 'm'));
    expect((await runMesh(['node', 'add', uniqueName('lab')], env)).code).toBe(0);
    expect(controller.exitCode).toBeNull();
  };

  beforeAll(async () => {
    t = await openTestMesh();
    pool = new pg.Pool({ connectionString: testDatabaseUrl('projector'), max: 2 });
    httpPort = await freePort();
    env = {
      ...(await t.operatorCommands()),
      MESH_NATS_URL: testNatsUrl(),
      MESH_DATABASE_URL: process.env.MESH_DATABASE_URL ?? '',
      MESH_NAME: t.names.prefix,
      MESH_NODES_STREAM: t.names.nodesStream,
      MESH_CONTROL_STREAM: t.names.controlStream,
      MESH_PROJECTOR_SCHEMA: schemas.control,
      MESH_READ_SCHEMA: schemas.read,
      MESH_CONTROLLER_SCHEMA: `status_${t.names.prefix}`,
      MESH_HTTP_PORT: String(httpPort),
    };
    // With the node flags `mesh controller` wants, so it runs in this one process (no re-exec to signal through).
    controller = spawn(process.execPath, [...FOLDING_NODE_FLAGS, join(projectRoot, 'bin', 'mesh.js'), 'controller'], { cwd: projectRoot, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
    createInterface({ input: controller.stdout as NonNullable<ChildProcess['stdout']> }).on('line', (line) => {
      try {
        lines.push(JSON.parse(line) as LogLine);
      } catch {
        lines.push({ level: 30, msg: line });
      }
    });
    await waitFor('the controller listening', async () => lines.some((l) => l.msg === 'controller started'), 60_000);
    expect((await runMesh(['node', 'add', 'lab1'], env)).code).toBe(0);
    await waitFor('the projections at the head', async () => ((await runMesh(['node', 'list'], env)).code === 0 ? true : undefined), 60_000);
  });
  afterAll(async () => {
    if (controller.exitCode === null && controller.signalCode === null) {
      const exited = new Promise((resolve) => controller.once('exit', resolve));
      controller.kill('SIGKILL');
      await exited;
    }
    await t.close();
    await dropSchemas(pool, schemas);
    await pool.end();
  });

  it('twenty bytes that are not JSON on a fact subject: every reader held, then passed once voided', async () => {
    const garbage = new TextEncoder().encode('{"not": json at all!');
    expect(garbage.length).toBe(20);
    const seq = (await jetstream(t.nc).publish(`${t.names.logPrefix}.fact.lab1`, garbage)).seq;

    await heldEverywhere(seq);
    await waitFor('the fact feed held', async () => ((await overview()).held.some((h) => h.reader === 'the fact feed' && h.seq === seq) ? true : undefined), 30_000);
    const history = await runMesh(['history', 'node.lab1'], env);
    expect(history.code).toBe(7);
    expect(history.stderr).toContain(`seq ${seq}`);
    const refusedPage = await catchUp();
    expect(refusedPage.ok).toBe(false);
    expect(refusedPage.refused?.[0]?.why).toContain(`seq ${seq}`);
    // A void is refused for a commit that verifies, and for one the log does not hold.
    expect((await runMesh(['log', 'void', '1', '--reason', 'looks fine'], env)).code).toBe(3);
    expect((await runMesh(['log', 'void', String((await head()) + 100), '--reason', 'not there'], env)).code).toBe(3);

    const voided = await runMesh(['log', 'void', String(seq), '--reason', 'a client published it around the controller'], env);
    expect(voided.code).toBe(0);
    expect(voided.stdout).toContain(`log seq ${seq} (fact.lab1) voided`);

    await passedEverywhere(seq);
    expect(saidOf(seq, /^passing seq/).some((l) => l.component === 'facts')).toBe(true);
    const after = await runMesh(['history', 'node.lab1'], env);
    expect(after.code).toBe(0);
    expect(after.stdout).toMatch(new RegExp(`^${seq}\\s+VOIDED`, 'm'));
    const page = await catchUp();
    expect(page.ok).toBe(true);
    expect(page.passed?.map((p) => p.seq)).toEqual([seq]);
  });

  it('a well-formed commit signed with another key: held, named by `mesh status`, then passed once voided', async () => {
    const last = await head();
    const stored = await t.jsm.streams.getMessage(t.names.logStream, { seq: last });
    if (!stored) throw new Error('no head');
    const before = linkOf(rawOf(stored)).hash;
    const body = encodeCommit({
      firstVersion: 1,
      events: [{ id: 'forged', type: 'node.added', schemaVersion: 2, aggregate: 'node.lab3', time: new Date().toISOString(), actor: 'controller', commandId: 'forged', causationId: 'forged', correlationId: 'forged', data: { node: 'lab3', root: '/var/lib/mesh', address: null } }],
    } as Commit);
    const subject = `${t.names.logPrefix}.node.lab3`;
    const { headers } = sealHeaders(newIdentity(), before, subject, last + 1, body);
    const seq = (await jetstream(t.nc).publish(subject, body, { headers })).seq;

    await heldEverywhere(seq);
    expect(saidOf(seq, /holds the controller at/)[0]).toMatchObject({ problem: expect.stringContaining('does not verify under the log') });
    const voided = await runMesh(['log', 'void', String(seq), '--reason', 'signed with a key that is not the controller’s'], env);
    expect(voided.code).toBe(0);
    await passedEverywhere(seq);
    // lab3 was never added: a voided commit is passed by, never applied.
    const nodes = await waitFor('every projection past it', async () => {
      const result = await runMesh(['node', 'list', '--json'], env);
      return result.code === 0 ? result : undefined;
    }, 60_000);
    expect(nodes.stdout).toContain('lab1');
    expect(nodes.stdout).not.toContain('"node":"lab3"');
  });

  it('stops when told to, having been held and passed', async () => {
    const exited = new Promise<number | null>((resolve) => controller.once('exit', (code) => resolve(code)));
    controller.kill('SIGTERM');
    const code = await Promise.race([exited, new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), 30_000))]);
    expect({ code, last: code === 0 ? [] : lines.slice(-5).map((l) => l.msg) }).toEqual({ code: 0, last: [] });
  });
});
