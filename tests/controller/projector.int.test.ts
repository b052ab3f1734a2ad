import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import type pg from 'pg';
import { ident } from '../../src/projections/sql.js';
import { dropSchemas, eventually, freshSchemas, openPool, servingBuild, testDatabaseUrl, waitServingAt } from '../projections/harness.js';
import { openTestMesh, type TestMesh } from '../helpers/test-mesh.js';
import { nodesProjection } from '../../src/projections/mesh/nodes.js';

// The controller runs the projector over every mesh projection, and states a stall in the log as
// a fact, once, however often it is retried and across a restart.

describe('the controller’s projector', () => {
  let t: TestMesh;
  let pool: pg.Pool;
  const schemas = freshSchemas();
  beforeEach(async () => {
    t = await openTestMesh();
    pool = openPool();
  });
  afterEach(async () => {
    await t.close();
    await dropSchemas(pool, schemas);
    await pool.end();
  });

  const stalledFacts = async () => {
    const facts = [];
    for await (const event of t.log.read({ aggregate: 'projection' })) if (event.type === 'projection.stalled') facts.push(event.data);
    return facts;
  };

  it('folds the log while it runs, and states a stall once; after the fix the rows are all there', async () => {
    const projector = { databaseUrl: testDatabaseUrl(), schemas };
    const controller = await t.startController({ projector });
    // It starts the projector in the background: the engine's tables appear when it has.
    await eventually('the projector to start', async () => (await pool.query<{ found: string | null }>('SELECT to_regclass($1) AS found', [`${schemas.control}.builds`])).rows[0]?.found, Boolean);
    const added = await t.run({ type: 'add-node', node: 'lab1' });
    await waitServingAt(pool, schemas, 'nodes', added.seq);
    expect((await pool.query(`SELECT name FROM ${ident(schemas.read)}.nodes`)).rows).toEqual([{ name: 'lab1' }]);

    // The serving build's table refuses the next node: SQLSTATE 23514 (a check constraint) until it is dropped.
    const build = await servingBuild(pool, schemas, 'nodes');
    const published: string[] = [];
    const subscription = t.nc.subscribe(`${t.names.prefix}.seat.mesh-controller.event.stalled`, { callback: (_e, m) => void published.push(m.string()) });
    await pool.query(`ALTER TABLE ${ident(build?.schemaName ?? '')}.nodes ADD CONSTRAINT not_lab2 CHECK (name <> 'lab2')`);
    const stuck = await t.run({ type: 'add-node', node: 'lab2' });
    const [fact] = await eventually('the stall stated in the log', stalledFacts, (facts) => facts.length > 0);
    expect(fact).toEqual({ projection: 'nodes', version: nodesProjection.version, seq: stuck.seq, eventType: 'node.added', sqlstate: '23514', error: expect.stringContaining('not_lab2') });

    // Retried, and the controller restarted: still one fact.
    await eventually('a few more attempts', () => servingBuild(pool, schemas, 'nodes'), (b) => (b?.stall?.attempts ?? 0) >= 3);
    await controller.stop();
    const again = await t.startController({ projector });
    await eventually('another attempt after the restart', () => servingBuild(pool, schemas, 'nodes'), (b) => (b?.stall?.attempts ?? 0) >= 5);
    expect(await stalledFacts()).toHaveLength(1);
    // Stated under the controller's seat for any consumer, once.
    expect(published.map((p) => (JSON.parse(p) as { type: string }).type)).toEqual(['projection.stalled']);
    subscription.unsubscribe();

    await pool.query(`ALTER TABLE ${ident(build?.schemaName ?? '')}.nodes DROP CONSTRAINT not_lab2`);
    await waitServingAt(pool, schemas, 'nodes', await t.log.headSeq());
    expect((await pool.query(`SELECT name FROM ${ident(schemas.read)}.nodes ORDER BY name`)).rows).toEqual([{ name: 'lab1' }, { name: 'lab2' }]);
    expect((await pool.query(`SELECT type, data->>'projection' AS projection FROM ${ident(schemas.read)}.facts`)).rows).toEqual([{ type: 'projection.stalled', projection: 'nodes' }]);
    expect((await servingBuild(pool, schemas, 'nodes'))?.stall).toBeNull();
    await again.stop();
  });
});
