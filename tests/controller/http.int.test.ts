import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import type { FastifyInstance } from 'fastify';
import { Validator } from '@seriousme/openapi-schema-validator';
import { createOperatorKey, signCommand, type OperatorKey } from '../../src/adapters/operator-keys.js';
import { meshHome } from '../../src/config.js';
import { CommandDispatcher } from '../../src/controller/command-dispatcher.js';
import { DeclarationPublisher } from '../../src/controller/declaration-publisher.js';
import { buildApp } from '../../src/controller/http/app.js';
import { FactFeed } from '../../src/controller/http/fact-feed.js';
import { overviewSource } from '../../src/controller/http/overview-source.js';
import { toolVerbs } from '../../src/controller/http/api-schemas.js';
import { MeshService } from '../../src/controller/mesh-service.js';
import { MeshView } from '../../src/controller/mesh-view.js';
import { nodeStateOf } from '../../src/controller/overview.js';
import { readiness } from '../../src/controller/readiness.js';
import { PrometheusMetrics } from '../../src/adapters/prometheus-metrics.js';
import { meshProjections } from '../../src/projections/catalogue.js';
import { CommitReader } from '../../src/projections/commit-reader.js';
import { projectionsStatus } from '../../src/projections/status.js';
import { ident } from '../../src/projections/sql.js';
import { meshEventRegistry } from '../../src/domain/registry.js';
import { fixtureManifest } from '../helpers/given.js';
import { testConsoleSource, unreadConsole } from '../helpers/console.js';
import { uniqueName } from '../helpers/names.js';
import { testDatabaseUrl } from '../helpers/database.js';
import { dropSchemas, freshSchemas, openPool, servingBuild, waitServingAt } from '../projections/harness.js';
import { openTestMesh, waitFor, type TestMesh } from '../helpers/test-mesh.js';
import { reportFor } from './report-for.js';
import { enrolHost, publishSignedBeat, publishSignedReport } from '../helpers/host-keys.js';
import type { Identity } from '../../src/adapters/identity.js';

describe("the controller's HTTP API", () => {
  let t: TestMesh;
  let app: FastifyInstance;
  let feed: FactFeed;
  let pool: pg.Pool;
  /** as the role that owns the projections */
  let owner: pg.Pool;
  let ada: OperatorKey;
  let metrics: PrometheusMetrics;
  /** the app's view of the mesh, as the controller process holds one; started by each test that needs it */
  let view: MeshView;
  /** what the app logged */
  let logged: string[];
  const schemas = freshSchemas();
  const dir = join(meshHome(), 'tmp', uniqueName('http-'));

  /** lab1's host key: what its reports and heartbeats are signed with, as its agent would */
  let lab1: Identity;
  beforeEach(async () => {
    // As the controller process composes them: one registry, told of the writer's commits, the passes, the commands and the reports.
    metrics = new PrometheusMetrics();
    t = await openTestMesh({ onStored: () => metrics.commitAppended() });
    ada = createOperatorKey(join(dir, uniqueName('ada-'), 'operator.key'), 'ada');
    await t.run({ type: 'add-operator', operator: 'ada', publicKey: ada.publicKey });
    await t.run({ type: 'register-module', manifest: fixtureManifest('distribution') });
    await t.run({ type: 'add-node', node: 'lab1' });
    lab1 = await enrolHost(t, 'lab1');
    const controller = await t.startController({ projector: { databaseUrl: testDatabaseUrl(), schemas }, onPass: (pass) => metrics.declarationPass(pass) });
    await t.startIngester(controller, { metrics });
    const newLog = t.newLog;
    pool = new pg.Pool({ connectionString: testDatabaseUrl('controller'), max: 2 });
    owner = openPool();
    feed = new FactFeed(newLog());
    await feed.start();
    view = new MeshView(newLog(), { logger: pino({ level: 'silent' }) });
    logged = [];
    const commits = new CommitReader(t.nc, { stream: t.names.logStream, subjectPrefix: t.names.logPrefix, registry: meshEventRegistry() });
    const projections = () => projectionsStatus(pool, schemas, commits, meshProjections());
    const overview = overviewSource({ mesh: new MeshService(newLog()), publisher: new DeclarationPublisher(t.nc, { nodesStream: t.names.nodesStream, prefix: t.names.prefix }), pool, statusSchema: `status_${t.names.prefix}`, heartbeatThresholdMs: 15_000 });
    app = buildApp({
      console: testConsoleSource(t, { pool, schemas, projections, facts: feed }),
      overview,
      onFact: (listener) => feed.subscribe(listener),
      recentFacts: () => feed.latest(),
      dispatcher: new CommandDispatcher(new MeshService(newLog()), { metrics }),
      logger: pino({}, { write: (line: string) => void logged.push(line) }),
      metrics: metrics.endpoint({
        logHead: async () => (await commits.head()).seq,
        viewSeq: () => view.mesh().seq,
        projections,
        nodeStates: async () => (await overview()).nodes.map(nodeStateOf),
      }),
      readiness: () => readiness({ view, projections, maxLagCommits: 0 }),
    });
  });
  afterEach(async () => {
    await app.close();
    await view.stop();
    await feed.stop();
    await t.close();
    await dropSchemas(owner, schemas);
    await owner.end();
    await pool.end();
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

  it('names on the page and in the overview a node that said more than its budget', async () => {
    publishSignedBeat(t.nc, t.names.prefix, 'lab1', lab1, { node: 'lab1', capabilities: Array.from({ length: 900 }, (_, n) => `k${n}-${'x'.repeat(1_000)}`) });
    const problem = await waitFor('lab1 named over its budget', async () => (await request('GET', '/api/overview')).json<{ problems: string[] }>().problems.find((p) => p.startsWith('lab1: over its budget')));
    expect(problem).toMatch(/^lab1: over its budget since \S+: 1 message refused, the last: a heartbeat of \d+ bytes: at most 4096 are read$/);
    // The page judges the machines once its projections are built.
    await waitFor('the page naming lab1', async () => (await request('GET', '/')).text.includes('lab1: over its budget since'));
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
    expect(unsigned.status).toBe(400);
    expect(unsigned.json<{ refused: { what: string }[] }>().refused.map((r) => r.what)).toEqual(expect.arrayContaining(['commandId', 'operator', 'time', 'signature']));
    const unknown = await request('POST', '/api/tools/launch-rockets', assign());
    expect(unknown.status).toBe(404);
  });

  it('answers a bad body with 400 naming every field that does not fit, as the tools read it', async () => {
    const badModule = signCommand(ada, uniqueName('c'), { type: 'assign', module: 5, node: 'lab1', hold: [], pins: {}, values: {}, placements: {} }, new Date());
    const bad = await request('POST', '/api/tools/assign', badModule);
    expect(bad.status).toBe(400);
    expect(bad.json()).toMatchObject({ ok: false, refused: [{ what: 'command.module', why: expect.stringContaining('expected string') }], error: { code: 'validation', field: 'command.module' } });
    // A command of another verb is read against the verb's schema, so the type is the field named.
    const otherVerb = await request('POST', '/api/tools/assign', signCommand(ada, uniqueName('c'), { type: 'add-node', node: 'lab9' }, new Date()));
    expect(otherVerb.status).toBe(400);
    expect(otherVerb.json()).toMatchObject({ error: { field: 'command.type' } });
    const notJson = await fetch(`http://127.0.0.1:${(app.server.address() as { port: number }).port}/api/tools/assign`, { method: 'POST', body: '{"commandId":', headers: { 'content-type': 'application/json' } });
    expect(notJson.status).toBe(400);
    expect(await notJson.json()).toMatchObject({ ok: false, error: { code: 'validation', field: 'body' } });
    expect(logged).toEqual([]);
  });

  it('answers a failure nobody meant with 500, and logs it', async () => {
    const failing = buildApp({
      console: unreadConsole,
      overview: () => Promise.reject(new Error('the overview broke')),
      onFact: () => () => undefined,
      recentFacts: () => [],
      dispatcher: { dispatch: () => Promise.reject(new TypeError('cannot read properties of undefined')) },
      logger: pino({}, { write: (line: string) => void logged.push(line) }),
    });
    try {
      const address = await failing.listen({ host: '127.0.0.1', port: 0 });
      const command = signCommand(ada, uniqueName('c'), { type: 'add-node', node: 'lab9' }, new Date());
      const answer = await fetch(`${address}/api/tools/add-node`, { method: 'POST', body: JSON.stringify(command), headers: { 'content-type': 'application/json' } });
      expect(answer.status).toBe(500);
      expect(await answer.json()).toMatchObject({ ok: false, error: { code: 'internal' } });
      expect((await fetch(`${address}/api/overview`)).status).toBe(500);
    } finally {
      await failing.close();
    }
    const lines = logged.map((line) => JSON.parse(line) as { level: number; msg: string; verb?: string; err?: { message: string } });
    expect(lines).toEqual([
      expect.objectContaining({ level: 50, msg: 'HTTP command failed', verb: 'add-node', err: expect.objectContaining({ message: 'cannot read properties of undefined' }) }),
      expect.objectContaining({ level: 50, msg: 'HTTP request failed', err: expect.objectContaining({ message: 'the overview broke' }) }),
    ]);
  });

  /** Every sample of the exposition, by name and labels. */
  const scrape = async (): Promise<{ text: string; value: (name: string, labels?: Record<string, string>) => number | undefined }> => {
    const response = await request('GET', '/metrics');
    expect(response.status).toBe(200);
    const samples = response.text
      .split('\n')
      .filter((line) => line !== '' && !line.startsWith('#'))
      .map((line) => {
        const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
        const labels = Object.fromEntries([...(match?.[2] ?? '').matchAll(/([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
        return { name: match?.[1], labels, value: Number(match?.[3]) };
      });
    return {
      text: response.text,
      value: (name, labels = {}) => samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value,
    };
  };

  it('serves its metrics in Prometheus text format, and they move after a command, a pass and a report', async () => {
    view.start();
    await waitServingAt(pool, schemas, 'nodes', await t.log.headSeq());
    const before = await scrape();
    for (const series of [
      'mesh_log_head_sequence',
      'mesh_log_commits_appended_total',
      'mesh_view_sequence',
      'mesh_projection_checkpoint_sequence',
      'mesh_projection_lag_commits',
      'mesh_projection_stalled',
      'mesh_declaration_passes_total',
      'mesh_declaration_pass_duration_seconds',
      'mesh_commands_total',
      'mesh_command_duration_seconds',
      'mesh_reports_total',
      'mesh_facts_stated_total',
      'mesh_nodes',
    ]) {
      expect(before.text).toContain(`# TYPE ${series} `);
    }
    expect(before.value('mesh_nodes', { state: 'never-heard-from' })).toBe(1);
    expect(before.value('mesh_projection_lag_commits', { projection: 'nodes', status: 'serving' })).toBe(0);
    expect(before.value('mesh_metrics_source_up', { source: 'projections' })).toBe(1);
    const passes = before.value('mesh_declaration_passes_total') ?? 0;
    const appended = before.value('mesh_log_commits_appended_total') ?? 0;
    expect(before.value('mesh_commands_total', { verb: 'assign', outcome: 'ok' })).toBeUndefined();

    const { declaration, until } = await streamAndAssignSigned();
    const refused = await request('POST', '/api/tools/assign', signCommand(ada, uniqueName('c'), { type: 'assign', module: 'distribution', node: 'lab1', hold: [], pins: {}, values: {}, placements: {} }, new Date()));
    expect(refused.status).toBe(409);
    await publishSignedReport(t.nc, t.names.prefix, 'lab1', lab1, reportFor(declaration, { running: [{ module: 'distribution', definitionVersion: 1, artifact: null }] }));
    await until('event: fact');

    const after = await waitFor('the report counted', async () => {
      const s = await scrape();
      return s.value('mesh_reports_total', { outcome: 'acted' }) === 1 ? s : undefined;
    });
    expect(after.value('mesh_commands_total', { verb: 'assign', outcome: 'ok' })).toBe(1);
    expect(after.value('mesh_commands_total', { verb: 'assign', outcome: 'refused' })).toBe(1);
    expect(after.value('mesh_command_duration_seconds_count', { verb: 'assign', outcome: 'ok' })).toBe(1);
    expect(after.value('mesh_declaration_passes_total')).toBeGreaterThan(passes);
    expect(after.value('mesh_declaration_pass_duration_seconds_count')).toBe(after.value('mesh_declaration_passes_total'));
    expect(after.value('mesh_log_commits_appended_total')).toBeGreaterThan(appended);
    expect(after.value('mesh_facts_stated_total', { type: 'fact.applied' })).toBe(1);
    expect(after.value('mesh_log_head_sequence')).toBeGreaterThanOrEqual((before.value('mesh_log_head_sequence') ?? 0) + 2);
    expect(after.value('mesh_nodes', { state: 'never-heard-from' })).toBe(0);
  });

  it('is live at once, and ready only once its view and every projection have caught up with the log', async () => {
    expect((await request('GET', '/healthz')).status).toBe(200);
    // The view has not started following the log.
    const early = await request('GET', '/readyz');
    expect(early.status).toBe(503);
    expect(early.json<{ ready: boolean; notReady: string[] }>().notReady).toContain("the controller's view has not caught up with the log yet (folded to seq 0)");
    view.start();
    await view.whenCaughtUp();
    const ready = await waitFor('ready', async () => {
      const r = await request('GET', '/readyz');
      return r.status === 200 ? r : undefined;
    });
    expect(ready.json()).toEqual({ ready: true, notReady: [] });

    // The serving nodes table refuses the next node: the projection stalls there, and the controller is not ready.
    const build = await servingBuild(owner, schemas, 'nodes');
    await owner.query(`ALTER TABLE ${ident(build?.schemaName ?? '')}.nodes ADD CONSTRAINT not_lab2 CHECK (name <> 'lab2')`);
    const stuck = await t.run({ type: 'add-node', node: 'lab2' });
    // The other projections go on past it (each is a fold of its own): once they are at the head, the stalled one alone is named.
    const stalled = await waitFor('not ready, the stalled projection alone named', async () => {
      const r = await request('GET', '/readyz');
      return r.status === 503 && r.text.includes('stalled') && r.json<{ notReady: string[] }>().notReady.length === 1 ? r : undefined;
    });
    expect(stalled.json<{ notReady: string[] }>().notReady).toEqual([expect.stringMatching(new RegExp(`^nodes is stalled at seq ${stuck.seq} \\(node.added, SQLSTATE 23514\\)`))]);

    await owner.query(`ALTER TABLE ${ident(build?.schemaName ?? '')}.nodes DROP CONSTRAINT not_lab2`);
    await waitFor('ready again', async () => ((await request('GET', '/readyz')).status === 200 ? true : undefined));
  });

  it('publishes an OpenAPI 3.1 document of every route, its request schemas from the same zod schemas', async () => {
    const response = await request('GET', '/api/openapi.json');
    expect(response.status).toBe(200);
    const document = response.json<{ openapi: string; paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: { $ref: string } }> } }>>; components: { schemas: Record<string, { properties: Record<string, { properties?: Record<string, { const?: string }> }>; required: string[] }> } }>();
    expect(document.openapi).toBe('3.1.0');
    const validation = await new Validator().validate(document);
    expect(validation.errors).toBeUndefined();
    expect(validation.valid).toBe(true);
    // Every $ref points at a schema the document holds.
    for (const [, name] of response.text.matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)) expect(document.components.schemas[name ?? '']).toBeDefined();
    expect(response.text).not.toMatch(/"\$ref":"#\/(?!components\/schemas\/)/);

    // Every route fastify serves is in it (each verb for /api/tools/:verb), and nothing it does not serve.
    const served: string[] = [];
    const at: string[] = [];
    for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
      // A tree, four characters a level: `├── api/overview (GET, HEAD)`.
      const match = /^([│├└─ ]*)(\S+)(?: \(([A-Z, ]+)\))?$/.exec(line);
      if (!match) continue;
      at.length = (match[1] ?? '').length / 4 - 1;
      at.push(match[2] ?? '');
      for (const method of (match[3] ?? '').split(', ').filter((m) => m !== '' && m !== 'HEAD')) served.push(`${method} ${at.join('')}`);
    }
    const documented = Object.entries(document.paths).flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method.toUpperCase()} ${path.replace(/^\/api\/tools\/[a-z-]+$/, '/api/tools/:verb').replace(/\{([a-z]+)\}/g, ':$1')}`));
    expect([...new Set(documented)].sort()).toEqual([...new Set(served)].sort());
    expect(toolVerbs()).toEqual(expect.arrayContaining(['assign', 'add-node', 'void-commit']));
    for (const verb of toolVerbs()) {
      const body = document.paths[`/api/tools/${verb}`]?.post?.requestBody?.content['application/json']?.schema;
      const schema = document.components.schemas[(body?.$ref ?? '').split('/').at(-1) ?? ''];
      expect(schema?.required).toEqual(expect.arrayContaining(['commandId', 'operator', 'command', 'time', 'signature']));
      expect(schema?.properties.command?.properties?.type?.const).toBe(verb);
    }
  });

  /** The fact stream opened, then distribution assigned to lab1 (`signed`: by ada, over the API): the stream and lab1's declaration. */
  const streamAndAssign = async (signed = false) => {
    const address = app.server.listening ? `http://127.0.0.1:${(app.server.address() as { port: number }).port}` : await app.listen({ host: '127.0.0.1', port: 0 });
    const response = await fetch(`${address}/api/facts/stream`);
    const reader = response.body?.getReader();
    const assign = { type: 'assign', module: 'distribution', node: 'lab1', hold: [], pins: {}, values: {}, placements: {} } as const;
    if (signed) expect((await request('POST', '/api/tools/assign', signCommand(ada, uniqueName('c'), { ...assign }, new Date()))).status).toBe(200);
    else await t.run({ ...assign, hold: [], pins: {}, values: {}, placements: {} });
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
  const streamAndAssignSigned = () => streamAndAssign(true);

  it('streams facts as they are stated', async () => {
    const { declaration, until } = await streamAndAssign();
    await publishSignedReport(t.nc, t.names.prefix, 'lab1', lab1, reportFor(declaration, { running: [{ module: 'distribution', definitionVersion: 1, artifact: null }] }));
    expect(await until('event: fact')).toContain('"type":"fact.applied"');
  });

  it('shows what a node holds and why, from the fact stated, and streams the held fact', async () => {
    const { declaration, until } = await streamAndAssign();
    const applied = reportFor(declaration, { running: [] });
    const held = applied.resources.find((r) => r.kind === 'container') ?? applied.resources[0];
    const reason = 'no Docker engine answers: Cannot connect to the Docker daemon';
    const holding = { ...applied, resources: applied.resources.map((r) => (r === held ? { ...r, outcome: 'held' as const, reason } : r)) };
    await publishSignedReport(t.nc, t.names.prefix, 'lab1', lab1, holding);
    expect(await until('"type":"fact.held"')).toContain(`"reason":"${reason}"`);
    const overview = await waitFor('the hold in the overview', async () => {
      const o = (await request('GET', '/api/overview')).json<{ nodes: { node: string; held: { module: string; resource: string; reason: string | null }[] }[] }>();
      return (o.nodes.find((n) => n.node === 'lab1')?.held.length ?? 0) > 0 ? o : undefined;
    });
    expect(overview.nodes.find((n) => n.node === 'lab1')?.held).toEqual([expect.objectContaining({ module: 'distribution', resource: held?.key, reason })]);
    expect((await request('GET', '/')).text).toContain('<table id="held">');
  });
});
