import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Msg } from '@nats-io/nats-core';
import pg from 'pg';
import { runMesh } from '../helpers/cli.js';
import { fixtureManifest } from '../helpers/given.js';
import { uniqueName } from '../helpers/names.js';
import { testDatabaseUrl } from '../helpers/database.js';
import { openTestMesh, type TestMesh } from '../helpers/test-mesh.js';
import { dropSchemas, freshSchemas } from '../projections/harness.js';

// Reads answer from the projections, NODES and the controller's node status: `mesh status` and
// `mesh node show` read nothing of the LOG stream but where it ends. The server is watched while
// they run: every JetStream API request a CLI process makes goes out with its own inbox as the
// reply, so a subscriber on `$JS.API.>` sees exactly what that process asked of LOG.

interface Asked {
  subject: string;
  body: string;
}

describe('reads never fold the log in the CLI', () => {
  let t: TestMesh;
  let env: Record<string, string>;
  let pool: pg.Pool;
  const schemas = freshSchemas();

  beforeAll(async () => {
    t = await openTestMesh();
    pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 2 });
    env = await t.startControlPlane(schemas);
    await t.run({ type: 'register-module', manifest: fixtureManifest('local-bus') });
    await t.run({ type: 'register-module', manifest: fixtureManifest('greeter') });
    await t.run({ type: 'add-node', node: 'alpha', root: '/srv/mesh', address: '127.0.0.1' });
    await t.run({ type: 'add-node', node: 'beta' });
    await t.run({ type: 'assign', module: 'local-bus', node: 'alpha', hold: ['mesh-broker'], pins: {}, values: { 'nats-port': '4222' }, placements: {} });
    await t.run({ type: 'assign', module: 'greeter', node: 'alpha', hold: [], pins: {}, values: { port: '30123' }, placements: {} });
    for (let i = 0; i < 20; i++) await t.run({ type: 'add-node', node: `filler${i}` });
  });
  afterAll(async () => {
    await t.close();
    await dropSchemas(pool, schemas);
    await pool.end();
  });

  /** What one CLI run asked of the LOG stream: its requests carry a reply inbox no other process uses. */
  const askedOfLog = async (args: string[]): Promise<{ code: number; stdout: string; asked: Asked[]; head: number }> => {
    const inbox = `_INBOX.${uniqueName('reads')}`;
    const head = (await t.jsm.streams.info(t.names.logStream)).state.last_seq;
    const seen: Asked[] = [];
    const mine = t.nc.subscribe('$JS.API.>', {
      callback: (_error: Error | null, msg: Msg) => {
        if (msg.reply?.startsWith(`${inbox}.`)) seen.push({ subject: msg.subject, body: msg.string() });
      },
    });
    // Flushed: the server has the subscription before the CLI asks anything.
    await t.nc.flush();
    try {
      const result = await runMesh(args, { ...env, MESH_BUS_INBOX: inbox });
      await t.nc.flush();
      return { code: result.code, stdout: result.stdout, asked: seen.filter((a) => a.subject.split('.').includes(t.names.logStream)), head };
    } finally {
      mine.unsubscribe();
    }
  };

  /** A request that reads LOG beyond its head: any consumer on it, or a message fetched by a sequence below the head. */
  const beyondTheHead = (requests: Asked[], head: number): Asked[] =>
    requests.filter((request) => {
      if (request.subject.includes('.CONSUMER.')) return true;
      if (request.subject.includes('.MSG.GET.') || request.subject.includes('.DIRECT.GET.')) {
        const body = request.body ? (JSON.parse(request.body) as { seq?: number; last_by_subj?: string; next_by_subj?: string }) : {};
        if (body.last_by_subj !== undefined) return false;
        return body.seq === undefined || body.seq < head;
      }
      return false;
    });

  it('mesh status reads LOG only where it ends', async () => {
    const status = await askedOfLog(['status', '--json']);
    expect(JSON.parse(status.stdout)).toMatchObject({ ok: false });
    expect(status.code).toBe(1);
    // It did ask LOG something (where it ends), so the watch sees this process's requests.
    expect(status.asked.length).toBeGreaterThan(0);
    expect(beyondTheHead(status.asked, status.head)).toEqual([]);
  });

  it('mesh node show reads LOG only where it ends', async () => {
    const shown = await askedOfLog(['node', 'show', 'alpha', '--json']);
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ node: 'alpha', assignments: [{ module: 'greeter' }, { module: 'local-bus' }], machine: { node: 'alpha', assigned: ['greeter', 'local-bus'] } });
    expect(shown.asked.length).toBeGreaterThan(0);
    expect(beyondTheHead(shown.asked, shown.head)).toEqual([]);
  });

  it('mesh seat handover without --from hands over from the holder the seats projection names', async () => {
    await t.run({ type: 'assign', module: 'local-bus', node: 'beta', hold: [], pins: {}, values: { 'nats-port': '4223' }, placements: {} });
    const handed = await runMesh(['seat', 'handover', 'mesh-broker', '--to', 'beta/local-bus', '--json'], env);
    expect(handed.code).toBe(0);
    const holding = await t.log.readAggregate('seat.mesh-broker');
    expect(holding.events.at(-1)?.data).toMatchObject({ from: { node: 'alpha', module: 'local-bus' }, to: { node: 'beta', module: 'local-bus' } });
  });

  it('mesh operator list answers from the operators projection', async () => {
    const listed = await runMesh(['operator', 'list', '--json'], env);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([{ operator: 'ada', publicKey: expect.any(String), revoked: false }]);
  });
});
