import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { jetstream } from '@nats-io/jetstream';
import pg from 'pg';
import type { FastifyInstance } from 'fastify';
import { createOperatorKey, signCommand, type OperatorKey } from '../../src/adapters/operator-keys.js';
import { meshHome } from '../../src/config.js';
import { CommandDispatcher } from '../../src/controller/command-dispatcher.js';
import { DeclarationPublisher } from '../../src/controller/declaration-publisher.js';
import { buildApp } from '../../src/controller/http/app.js';
import { FactFeed } from '../../src/controller/http/fact-feed.js';
import { overviewSource } from '../../src/controller/http/overview-source.js';
import { MeshService } from '../../src/controller/mesh-service.js';
import { fixtureManifest } from '../helpers/given.js';
import { uniqueName } from '../helpers/names.js';
import { testDatabaseUrl } from '../helpers/database.js';
import { openTestMesh, waitFor, type TestMesh } from '../helpers/test-mesh.js';
import { reportFor } from './report-for.js';

describe("the controller's HTTP API", () => {
  let t: TestMesh;
  let app: FastifyInstance;
  let feed: FactFeed;
  let pool: pg.Pool;
  let ada: OperatorKey;
  const dir = join(meshHome(), 'tmp', uniqueName('http-'));

  beforeEach(async () => {
    t = await openTestMesh();
    ada = createOperatorKey(join(dir, uniqueName('ada-'), 'operator.key'), 'ada');
    await t.run({ type: 'add-operator', operator: 'ada', publicKey: ada.publicKey });
    await t.run({ type: 'register-module', manifest: fixtureManifest('distribution') });
    await t.run({ type: 'add-node', node: 'lab1' });
    const controller = await t.startController();
    await t.startIngester(controller);
    const newLog = t.newLog;
    pool = new pg.Pool({ connectionString: testDatabaseUrl('controller'), max: 2 });
    feed = new FactFeed(newLog());
    await feed.start();
    app = buildApp({
      overview: overviewSource({ mesh: new MeshService(newLog()), publisher: new DeclarationPublisher(t.nc, { nodesStream: t.names.nodesStream, prefix: t.names.prefix }), pool, statusSchema: `status_${t.names.prefix}`, heartbeatThresholdMs: 15_000 }),
      onFact: (listener) => feed.subscribe(listener),
      recentFacts: () => feed.latest(),
      dispatcher: new CommandDispatcher(new MeshService(newLog())),
    });
  });
  afterEach(async () => {
    await app.close();
    await feed.stop();
    await pool.end();
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  // Over a real socket: fastify's in-process injection loads an ES module jest cannot require.
  const request = async (method: 'GET' | 'POST', url: string, body?: unknown): Promise<{ status: number; text: string; json: <T>() => T }> => {
    const address = app.server.listening ? `http://127.0.0.1:${(app.server.address() as { port: number }).port}` : await app.listen({ host: '127.0.0.1', port: 0 });
    const response = await fetch(`${address}${url}`, { method, ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }) });
    const text = await response.text();
    return { status: response.status, text, json: <T>() => JSON.parse(text) as T };
  };

  it('serves the page, and an overview that names a node never heard from instead of calling it healthy', async () => {
    const page = await request('GET', '/');
    expect(page.status).toBe(200);
    expect(page.text).toContain('<title>the mesh</title>');
    const overview = (await request('GET', '/api/overview')).json<{ healthy: boolean; problems: string[]; seats: { seat: string; holders: string[] }[] }>();
    expect(overview.healthy).toBe(false);
    expect(overview.problems).toContain('lab1: never heard from');
    expect(overview.seats.find((s) => s.seat === 'mesh-git')?.holders).toEqual([]);
  });

  it('takes signed commands on the same verbs as the tools, and refuses the rest with a status', async () => {
    const assign = () => signCommand(ada, uniqueName('c'), { type: 'assign', module: 'distribution', node: 'lab1', hold: [], pins: {}, values: {}, placements: {} }, new Date());
    const ok = await request('POST', '/api/tools/assign', assign());
    expect(ok.status).toBe(200);
    expect(ok.json()).toMatchObject({ ok: true });
    const refused = await request('POST', '/api/tools/assign', assign());
    expect(refused.status).toBe(409);
    expect(refused.json()).toMatchObject({ ok: false, refused: [{ why: 'lab1 already runs distribution, and one node runs one of each (ADR 0115)' }] });
    const unsigned = await request('POST', '/api/tools/add-node', { command: { type: 'add-node', node: 'x' } });
    expect(unsigned.status).toBe(409);
  });

  /** The fact stream opened, then distribution assigned to lab1: the stream and lab1's declaration. */
  const streamAndAssign = async () => {
    const address = await app.listen({ host: '127.0.0.1', port: 0 });
    const response = await fetch(`${address}/api/facts/stream`);
    const reader = response.body?.getReader();
    await t.run({ type: 'assign', module: 'distribution', node: 'lab1', hold: [], pins: {}, values: {}, placements: {} });
    const declaration = await waitFor('the declaration', async () => {
      const d = await t.declarationOf('lab1');
      return d?.assignments.length === 1 ? d : undefined;
    });
    /** What the stream carried until `marker` (or its end). */
    const until = async (marker: string): Promise<string> => {
      let received = '';
      while (!received.includes(marker)) {
        const chunk = await reader?.read();
        if (!chunk || chunk.done) break;
        received += new TextDecoder().decode(chunk.value);
      }
      await reader?.cancel();
      return received;
    };
    return { declaration, until };
  };

  it('streams facts as they are stated', async () => {
    const { declaration, until } = await streamAndAssign();
    await jetstream(t.nc).publish(
      `${t.names.prefix}.control.lab1.report`,
      JSON.stringify(reportFor(declaration, { running: [{ module: 'distribution', definitionVersion: 1, artifact: null }] })),
    );
    expect(await until('event: fact')).toContain('"type":"fact.applied"');
  });

  it('shows what a node holds and why, from the fact stated, and streams the held fact', async () => {
    const { declaration, until } = await streamAndAssign();
    const applied = reportFor(declaration, { running: [] });
    const held = applied.resources.find((r) => r.kind === 'container') ?? applied.resources[0];
    const reason = 'no Docker engine answers: Cannot connect to the Docker daemon';
    const holding = { ...applied, resources: applied.resources.map((r) => (r === held ? { ...r, outcome: 'held' as const, reason } : r)) };
    await jetstream(t.nc).publish(`${t.names.prefix}.control.lab1.report`, JSON.stringify(holding));
    expect(await until('"type":"fact.held"')).toContain(`"reason":"${reason}"`);
    const overview = await waitFor('the hold in the overview', async () => {
      const o = (await request('GET', '/api/overview')).json<{ nodes: { node: string; held: { module: string; resource: string; reason: string | null }[] }[] }>();
      return (o.nodes.find((n) => n.node === 'lab1')?.held.length ?? 0) > 0 ? o : undefined;
    });
    expect(overview.nodes.find((n) => n.node === 'lab1')?.held).toEqual([expect.objectContaining({ module: 'distribution', resource: held?.key, reason })]);
    expect((await request('GET', '/')).text).toContain('<table id="held">');
  });
});
