import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { databaseUrlFor, passwordFileName } from '../../src/adapters/database-logins.js';
import { meshHome } from '../../src/config.js';
import { freePort } from '../../src/dev/ports.js';
import { startPostgres, stopPostgres } from '../../src/dev/postgres.js';
import type { Declaration } from '../../src/domain/declarations/declaration.js';
import { meshProjections } from '../../src/projections/catalogue.js';
import { listBuilds, type ProjectorSchemas } from '../../src/projections/control.js';
import { runMesh } from '../helpers/cli.js';
import { faultCount, report } from '../helpers/faults.js';
import { factAggregate } from '../../src/domain/facts/events.js';
import { fixtureManifest } from '../helpers/given.js';
import { uniqueName } from '../helpers/names.js';
import { openTestMesh, waitFor, type TestMesh } from '../helpers/test-mesh.js';
import { reportFor } from '../controller/report-for.js';
import { enrolHost, publishSignedReport } from '../helpers/host-keys.js';
import type { Identity } from '../../src/adapters/identity.js';
import { besideARebuild, freshSchemas } from '../projections/harness.js';

// PostgreSQL stopped as a crash would (pg_ctl -m immediate) under a running controller, while
// commands and node reports keep arriving, then started again. Every projection reaches the log's
// head by itself — no rebuild, no restart — and equals a rebuild; every read in between says
// PostgreSQL is unreachable and since when, never that the controller may not be running.
// MESH_FAULT_PG_OUTAGE_MS sets how long it stays away (a minute by default, the size).

const OUTAGE_MS = faultCount('MESH_FAULT_PG_OUTAGE_MS', Number(process.env.MESH_TEST_PG_OUTAGE_MS ?? 60_000));

describe('PostgreSQL away for a while under a running controller', () => {
  let t: TestMesh;
  let pool: pg.Pool;
  let env: Record<string, string>;
  let projectorUrl: string;
  const schemas: ProjectorSchemas = freshSchemas();
  // Not under .mesh/tmp: key folders made there first leave it 0700, and the postgres user must reach its data.
  const dir = join(meshHome(), 'scratch-postgres', uniqueName('pg-outage-'));
  const postgres = { dir, port: 0, secretsDir: join(dir, 'secrets') };

  const head = async (): Promise<number> => (await t.jsm.streams.info(t.names.logStream)).state.last_seq;
  /** Each projection's serving checkpoint, by name. */
  const checkpoints = async (): Promise<Record<string, number>> =>
    Object.fromEntries((await listBuilds(pool, schemas)).filter((b) => b.status === 'serving').map((b) => [b.projection, b.checkpoint]));
  const allAt = async (seq: number): Promise<boolean> => {
    const at = await checkpoints();
    return meshProjections().every((p) => (at[p.name] ?? 0) >= seq);
  };
  const declared = (node: string) =>
    waitFor(`${node} declared`, async () => {
      const d = await t.declarationOf(node);
      return d && d.assignments.length > 0 ? d : undefined;
    });
  /** Each node's host key, as it enrolled: a report counts only when its node signed it. */
  const hosts = new Map<string, Identity>();
  const publishReport = (declaration: Declaration) => publishSignedReport(t.nc, t.names.prefix, declaration.node, hosts.get(declaration.node)!, reportFor(declaration));

  beforeAll(async () => {
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    postgres.port = await freePort();
    const started = await startPostgres(postgres);
    const settings = { databaseUrl: started.url, secretsDir: postgres.secretsDir };
    projectorUrl = databaseUrlFor('projector', settings, {});
    pool = new pg.Pool({ connectionString: projectorUrl, max: 2 });
    pool.on('error', () => undefined);
    t = await openTestMesh();
    // Retries capped at 2 s, so "by itself" comes within seconds of the server's return.
    const controller = await t.startController({ projector: { databaseUrl: projectorUrl, schemas, settings: { retry: { initialMs: 100, maxMs: 2_000 } } }, storeWatchMs: 500 });
    await t.startIngester(controller, { databaseUrl: databaseUrlFor('controller', settings, {}), schema: `status_${t.names.prefix}` });
    env = {
      ...(await t.readEnv(schemas)),
      MESH_DATABASE_URL: started.url,
      MESH_PG_PASSWORD_FILE_READER: join(postgres.secretsDir, passwordFileName('reader')),
      MESH_READ_TIMEOUT_MS: '5000',
    };
  });
  afterAll(async () => {
    await t?.close();
    await pool?.end().catch(() => undefined);
    await stopPostgres(postgres, 'immediate').catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  it('every projection reaches the head by itself and equals a rebuild; reads in between name PostgreSQL and since when', async () => {
    await t.run({ type: 'register-module', manifest: fixtureManifest('distribution') });
    for (const node of ['alpha', 'beta']) {
      await t.run({ type: 'add-node', node });
      hosts.set(node, await enrolHost(t, node));
      await t.run({ type: 'assign', module: 'distribution', node, hold: [], pins: {}, values: {}, placements: {} });
    }
    const alpha = await declared('alpha');
    await publishReport(alpha);
    await waitFor('the applied fact and every projection at the head', async () => (await head()) > 0 && (await t.jsm.streams.info(t.names.controlStream)).state.messages === 0 && allAt(await head()), 60_000);
    const seats = await runMesh(['seats', '--json'], env);
    expect(seats.code).toBe(0);

    await stopPostgres(postgres, 'immediate');
    const stoppedAt = Date.now();
    // Commands and reports keep coming while it is away: the log takes the commands, CONTROL keeps the reports.
    let n = 0;
    let answered = 0;
    const reads: { args: string[]; code: number; stderr: string }[] = [];
    const beta = await declared('beta');
    await publishReport(beta);
    while (Date.now() - stoppedAt < OUTAGE_MS) {
      if ((await t.run({ type: 'add-node', node: `during-${++n}` })).seq > 0) answered++;
      if (reads.length < 5) {
        const args = [['seats'], ['node', 'list'], ['status'], ['projections', 'status'], ['node', 'list', '--json']][reads.length] as string[];
        const result = await runMesh(args, env);
        reads.push({ args, code: result.code, stderr: result.stderr + result.stdout });
      } else {
        await new Promise((r) => setTimeout(r, 1_000));
      }
    }
    const heldReports = (await t.jsm.streams.info(t.names.controlStream)).state.messages;
    expect(answered).toBe(n);
    expect(heldReports).toBeGreaterThan(0);
    for (const read of reads) {
      // Unavailable (exit 6), naming the store, its address and when the outage began as the controller saw it.
      expect({ args: read.args, code: read.code }).toEqual({ args: read.args, code: 6 });
      expect(read.stderr).toMatch(/PostgreSQL at postgres:\/\/\S+ is unreachable since \d{4}-\d\d-\d\dT[\d:.]+Z/);
      expect(read.stderr).not.toMatch(/controller running/i);
    }
    const during = await head();

    await startPostgres(postgres);
    // By itself: nothing restarted, nothing rebuilt. The reports waiting in CONTROL become facts, the log moves on.
    await waitFor('the reports taken', async () => (await t.jsm.streams.info(t.names.controlStream)).state.messages === 0, 60_000);
    // Taken and acted on: beta's report, held through the outage, became its applied fact.
    const betaFacts = (await t.log.readAggregate(factAggregate('beta'))).events.map((e) => e.type);
    expect(betaFacts).toContain('fact.applied');
    const last = await t.run({ type: 'add-node', node: 'after' });
    expect(last.seq).toBeGreaterThan(during);
    await waitFor('every projection at the head', async () => allAt(await head()), 60_000);
    const builds = await listBuilds(pool, schemas);
    expect(builds.every((b) => b.generation === 1 && b.status === 'serving' && b.stall === null)).toBe(true);

    const status = await runMesh(['projections', 'status', '--json'], env);
    const states = status.stdout.trim().split('\n').map((line) => JSON.parse(line) as { projection: string; lagCommits: number; problem: string | null });
    expect(states.map((s) => [s.projection, s.lagCommits, s.problem])).toEqual(meshProjections().map((p) => [p.name, 0, null]).sort((a, b) => String(a[0]).localeCompare(String(b[0]))));
    expect(status.code).toBe(0);

    const { built, rebuilt } = await besideARebuild(pool, { databaseUrl: projectorUrl, nc: t.nc, log: { stream: t.names.logStream, subjectPrefix: t.names.logPrefix }, schemas, headSeq: await head() });
    expect(Object.keys(built).length).toBeGreaterThan(10);
    expect(built).toEqual(rebuilt);
    report('PostgreSQL stopped while commands and reports arrive', {
      did: `PostgreSQL stopped (immediate) for ${(OUTAGE_MS / 1000).toFixed(0)} s; ${n} commands sent and a node's report published meanwhile, ${reads.length} reads tried`,
      found: `${answered} of ${n} commands answered from the log; ${heldReports} report held in CONTROL, then applied (${betaFacts.join(', ')}); every read exit 6 naming PostgreSQL and since when; projections at the head by themselves and equal to a rebuild`,
    });
  }, OUTAGE_MS + 200_000);
});
