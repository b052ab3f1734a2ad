import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import type { Controller } from '../../src/controller/controller.js';
import { meshProjections } from '../../src/projections/catalogue.js';
import { listBuilds, type Build } from '../../src/projections/control.js';
import { ident } from '../../src/projections/sql.js';
import { runMesh } from '../helpers/cli.js';
import { testDatabaseUrl } from '../helpers/database.js';
import { openTestMesh, waitFor, type TestMesh } from '../helpers/test-mesh.js';
import { besideARebuild, dropSchemas, freshSchemas } from '../projections/harness.js';

// A projection broken under a running controller by a change to its schema (a column it writes
// renamed), left stalled, then mended by hand: it retries the whole time on a capped backoff — its
// attempts and next try in `mesh projections status` — and resumes by itself, with no rebuild,
// both on the controller that saw it stall and on one started while it was stalled. Its rows then
// equal a rebuild. MESH_TEST_STALL_MS sets how long it stays broken: a minute by default; set it to several, as an operator's broken schema would stay, to try it longer.

const STALL_MS = Number(process.env.MESH_TEST_STALL_MS ?? 60_000);
const RETRY_MAX_MS = 1_000;

interface StatusLine {
  projection: string;
  lagCommits: number;
  stall: { seq: number; sqlstate?: string; attempts: number; nextAttemptAt: string | null } | null;
  problem: string | null;
}

describe('a projection stalled by a schema change resumes by itself once the schema is mended', () => {
  let t: TestMesh;
  let pool: pg.Pool;
  let env: Record<string, string>;
  let first: Controller;
  const schemas = freshSchemas();
  const settings = { retry: { initialMs: 100, maxMs: RETRY_MAX_MS } };

  const startController = async (): Promise<Controller> => {
    const controller = await t.startController({ projector: { databaseUrl: testDatabaseUrl(), schemas, settings } });
    await t.startIngester(controller);
    return controller;
  };
  const nodesBuild = async (): Promise<Build> => {
    const build = (await listBuilds(pool, schemas, 'nodes')).find((b) => b.status === 'serving');
    if (!build) throw new Error('no serving build of nodes');
    return build;
  };
  const head = async (): Promise<number> => (await t.jsm.streams.info(t.names.logStream)).state.last_seq;
  const allAtHead = async (): Promise<boolean> => {
    const seq = await head();
    const builds = (await listBuilds(pool, schemas)).filter((b) => b.status === 'serving');
    return meshProjections().every((p) => (builds.find((b) => b.projection === p.name)?.checkpoint ?? 0) >= seq);
  };
  const status = async (): Promise<{ code: number; nodes: StatusLine }> => {
    const result = await runMesh(['projections', 'status', '--json'], env);
    const lines = result.stdout.trim().split('\n').map((line) => JSON.parse(line) as StatusLine);
    return { code: result.code, nodes: lines.find((l) => l.projection === 'nodes') as StatusLine };
  };
  // A column the nodes projection writes (NOT NULL) renamed: every node.added stalls it with SQLSTATE 23502.
  const breakSchema = async () => pool.query(`ALTER TABLE ${ident((await nodesBuild()).schemaName)}.nodes RENAME COLUMN root TO root_elsewhere`);
  const mendSchema = async () => pool.query(`ALTER TABLE ${ident((await nodesBuild()).schemaName)}.nodes RENAME COLUMN root_elsewhere TO root`);
  const stalledAt = (seq: number) => waitFor(`nodes stalled at seq ${seq}`, async () => ((await nodesBuild()).stall?.seq === seq ? (await nodesBuild()).stall : undefined));

  beforeAll(async () => {
    t = await openTestMesh();
    pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 2 });
    first = await startController();
    env = await t.readEnv(schemas);
  });
  afterAll(async () => {
    await t.close();
    await dropSchemas(pool, schemas);
    await pool.end();
  });

  it('retries while stalled, says how often and when next, and resumes with no rebuild — on a long-lived controller and across a restart — equal to a rebuild', async () => {
    await t.run({ type: 'add-node', node: 'first' });
    await waitFor('every projection at the head', allAtHead, 60_000);
    const { id, generation } = await nodesBuild();

    // Broken on a long-lived controller.
    await breakSchema();
    const broken = await t.run({ type: 'add-node', node: 'second' });
    await stalledAt(broken.seq);
    const early = await status();
    expect(early.code).toBe(1);
    expect(early.nodes.stall).toMatchObject({ seq: broken.seq, sqlstate: '23502' });
    expect(early.nodes.problem).toContain(`nodes is stalled at seq ${broken.seq} (node.added, SQLSTATE 23502)`);
    // Left stalled while the log moves on; the other projections follow it.
    const until = Date.now() + STALL_MS;
    let during = 0;
    while (Date.now() < until) {
      await t.run({ type: 'add-node', node: `during-${++during}` });
      await new Promise((r) => setTimeout(r, 1_000));
    }
    const late = await status();
    const checkedAt = Date.now();
    expect(late.code).toBe(1);
    expect(late.nodes.stall?.seq).toBe(broken.seq);
    // Retried the whole time, on a backoff capped at RETRY_MAX_MS: many tries, and the next one due soon.
    expect(late.nodes.stall?.attempts).toBeGreaterThan((early.nodes.stall?.attempts ?? 0) + STALL_MS / RETRY_MAX_MS / 2);
    const next = Date.parse(late.nodes.stall?.nextAttemptAt ?? '');
    expect(next).toBeGreaterThan(checkedAt - 10_000);
    expect(next).toBeLessThan(checkedAt + RETRY_MAX_MS + 1_000);
    // -o wide: the stall on one line, as a log scraper reads it (by default it wraps at 100 columns).
    const overview = await runMesh(['status', '-o', 'wide'], env);
    expect(overview.code).toBe(1);
    expect(overview.stdout).toMatch(new RegExp(`nodes\\s+serving .*STALLED at seq ${broken.seq} \\(node.added, SQLSTATE 23502\\) since \\S+, \\d+ tries, next at \\S+`));

    await mendSchema();
    await waitFor('nodes past the stall by itself', async () => (await nodesBuild()).checkpoint >= broken.seq && (await nodesBuild()).stall === null, 10_000 + RETRY_MAX_MS);
    await waitFor('every projection at the head', allAtHead, 10_000 + RETRY_MAX_MS);

    // Broken again, and the controller restarted while it is stalled.
    await breakSchema();
    const again = await t.run({ type: 'add-node', node: 'third' });
    const before = await stalledAt(again.seq);
    await first.stop();
    const restarted = await startController();
    await waitFor('retries by the restarted controller', async () => ((await nodesBuild()).stall?.attempts ?? 0) > (before?.attempts ?? 0) + 2);
    await mendSchema();
    await waitFor('every projection at the head by itself', allAtHead, 10_000 + RETRY_MAX_MS);
    expect(restarted).toBeDefined();

    // No rebuild: the same build serves, and its rows are what a rebuild makes.
    expect(await nodesBuild()).toMatchObject({ id, generation, stall: null });
    const healthy = await status();
    expect(healthy).toMatchObject({ code: 0, nodes: { lagCommits: 0, stall: null, problem: null } });
    const stated = [];
    for await (const event of t.log.read({ aggregate: 'projection.nodes' })) if (event.type === 'projection.stalled') stated.push(event.data.seq);
    expect(stated).toEqual([broken.seq, again.seq]);
    const { built, rebuilt } = await besideARebuild(pool, { databaseUrl: testDatabaseUrl(), nc: t.nc, log: { stream: t.names.logStream, subjectPrefix: t.names.logPrefix }, schemas, headSeq: await head() });
    expect(built['nodes.nodes']).toHaveLength(3 + during);
    expect(built).toEqual(rebuilt);
  }, STALL_MS + 150_000);
});
