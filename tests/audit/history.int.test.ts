import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type pg from 'pg';
import { runMesh } from '../helpers/cli.js';
import { fixtureManifest } from '../helpers/given.js';
import { testNatsUrl } from '../helpers/log.js';
import { openTestMesh, type TestMesh } from '../helpers/test-mesh.js';
import { dropSchemas, freshSchemas, openPool, testDatabaseUrl } from '../projections/harness.js';

// The audit trail from the command line: one thing's whole history, and the log narrowed by who,
// which conversation and when. `mesh log` answers from the audit projection, so the mesh's
// controller folds its log into schemas of this test's own.

describe('history and the log’s filters', () => {
  let t: TestMesh;
  let env: Record<string, string>;
  let pool: pg.Pool;
  const schemas = freshSchemas();
  const json = (stdout: string) => stdout.trim().split('\n').filter(Boolean).map((line) => JSON.parse(line) as { type: string; actor: string; aggregate: string; correlationId: string; time: string; seq: number });

  beforeAll(async () => {
    t = await openTestMesh();
    pool = openPool();
    await t.startController({ projector: { databaseUrl: testDatabaseUrl(), schemas } });
    env = { MESH_NATS_URL: testNatsUrl(), MESH_PROJECTOR_SCHEMA: schemas.control, MESH_READ_SCHEMA: schemas.read, ...(await t.operatorCommands()) };
    await t.run({ type: 'register-module', manifest: fixtureManifest('distribution') });
    await t.run({ type: 'add-node', node: 'lab1' });
    const mesh = (...args: string[]) => runMesh(args, env);
    expect((await mesh('assign', 'distribution', 'lab1', '--hold', 'mesh-artifact-store')).code).toBe(0);
    expect((await mesh('seat', 'rename', 'mesh-artifact-store', 'mesh-registry')).code).toBe(0);
  });
  afterAll(async () => {
    await t.close();
    await dropSchemas(pool, schemas);
    await pool.end();
  });

  it('tells everything that happened to a node, including its assignments, with who did it', async () => {
    const result = await runMesh(['history', 'node.lab1', '--json'], env);
    expect(result.code).toBe(0);
    const events = json(result.stdout);
    expect(events.map((e) => e.type)).toEqual(['node.added', 'assignment.created', 'seat.held']);
    expect(events.slice(1).every((e) => e.actor === 'operator:ada')).toBe(true);
  });

  it('tells a seat’s history by its new or old name, holdings included', async () => {
    for (const name of ['seat.mesh-registry', 'seat.mesh-artifact-store']) {
      const events = json((await runMesh(['history', name, '--json'], env)).stdout);
      expect(events.map((e) => e.type)).toEqual(['seat.defined', 'seat.held', 'seat.renamed']);
    }
    const human = await runMesh(['history', 'seat.mesh-registry'], env);
    expect(human.stdout).toMatch(/seat\.renamed\s+operator:ada/);
  });

  it('narrows the log by actor, correlation and time', async () => {
    const byAda = json((await runMesh(['log', '--actor', 'operator:ada', '--json'], env)).stdout);
    expect(byAda.map((e) => e.type)).toEqual(['operator.added', 'assignment.created', 'seat.held', 'seat.renamed'].slice(1));
    const genesis = json((await runMesh(['log', '--actor', 'gen*', '--json'], env)).stdout);
    expect(genesis.map((e) => e.type)).toEqual(['operator.added']);
    const assign = byAda[0];
    const conversation = json((await runMesh(['log', '--correlation', assign?.correlationId ?? '', '--json'], env)).stdout);
    expect(conversation.map((e) => e.type)).toEqual(['assignment.created', 'seat.held']);
    const future = json((await runMesh(['log', '--after', new Date(Date.now() + 60_000).toISOString(), '--json'], env)).stdout);
    expect(future).toEqual([]);
    const refused = await runMesh(['log', '--after', 'yesterday'], env);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--after "yesterday" is not a time');
  });

  it('takes a bare name when it names one thing, lists the candidates when it names more, and says when it names nothing', async () => {
    const bare = await runMesh(['history', 'lab1', '--json'], env);
    expect(bare.code).toBe(0);
    expect(json(bare.stdout).map((e) => e.type)).toEqual(['node.added', 'assignment.created', 'seat.held']);
    expect(json((await runMesh(['history', 'mesh-artifact-store', '--json'], env)).stdout).map((e) => e.type)).toEqual(['seat.defined', 'seat.held', 'seat.renamed']);
    expect(json((await runMesh(['history', 'lab1/distribution', '--json'], env)).stdout).map((e) => e.type)).toEqual(['assignment.created', 'seat.held']);

    await t.run({ type: 'add-node', node: 'distribution' });
    const ambiguous = await runMesh(['history', 'distribution'], env);
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toContain('distribution names more than one thing: node.distribution, module.distribution');

    const nothing = await runMesh(['history', 'nosuch'], env);
    expect(nothing.code).toBe(5);
    expect(nothing.stderr).toContain('nothing is known of nosuch');
  });

  it('tells a node’s history with the handover that took a seat from it, and the other node’s with the one that gave it', async () => {
    const mesh = (...args: string[]) => runMesh(args, env);
    expect((await mesh('node', 'add', 'lab2')).code).toBe(0);
    expect((await mesh('assign', 'distribution', 'lab2')).code).toBe(0);
    expect((await mesh('seat', 'handover', 'mesh-registry', '--to', 'lab2/distribution')).code).toBe(0);
    for (const node of ['lab1', 'lab2']) {
      const result = await runMesh(['history', node, '--json'], env);
      expect(result.code).toBe(0);
      expect(json(result.stdout).map((e) => e.type)).toContain('seat.handed-over');
    }
    const module = json((await runMesh(['history', 'module.distribution', '--json'], env)).stdout);
    expect(module.filter((e) => e.type === 'seat.handed-over')).toHaveLength(1);
  });
});
