import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { databaseUrlFor } from '../../src/adapters/database-logins.js';
import { meshHome } from '../../src/config.js';
import { freePort } from '../../src/dev/ports.js';
import { startPostgres, stopPostgres } from '../../src/dev/postgres.js';
import type { StoredEvent } from '../../src/domain/events/envelope.js';
import type { Report } from '../../src/domain/reports/report.js';
import type { Identity } from '../../src/adapters/identity.js';
import { cutProxy } from '../helpers/cut-proxy.js';
import { enrolHost, publishSignedReport } from '../helpers/host-keys.js';
import { testDatabaseUrl } from '../helpers/database.js';
import { fixtureManifest } from '../helpers/given.js';
import { uniqueName } from '../helpers/names.js';
import { openTestMesh, waitFor, type TestMesh } from '../helpers/test-mesh.js';
import { reportFor } from './report-for.js';

describe('reports become facts, stated once, on change', () => {
  let t: TestMesh;
  /** lab1's host key: what its reports are signed with */
  let host: Identity;
  beforeEach(async () => {
    t = await openTestMesh();
    await t.run({ type: 'register-module', manifest: fixtureManifest('distribution') });
    await t.run({ type: 'add-node', node: 'lab1' });
    host = await enrolHost(t, 'lab1');
    await t.run({ type: 'assign', module: 'distribution', node: 'lab1', hold: [], pins: {}, values: {}, placements: {} });
  });
  afterEach(async () => t.close());

  const facts = async (): Promise<StoredEvent[]> => {
    const found: StoredEvent[] = [];
    for await (const event of t.log.read({ aggregate: 'fact' })) found.push(event);
    return found;
  };
  const publishReport = async (report: Report) => publishSignedReport(t.nc, t.names.prefix, report.node, host, report);
  const declared = () => waitFor('lab1 declared with distribution', async () => {
    const d = await t.declarationOf('lab1');
    return d?.assignments.length === 1 ? d : undefined;
  });

  it('three identical reports make one applied fact, published under the controller seat; a restart states nothing again', async () => {
    const controller = await t.startController();
    await t.startIngester(controller);
    const seen: string[] = [];
    const subscription = t.nc.subscribe(`${t.names.prefix}.seat.mesh-controller.event.>`, { callback: (_e, m) => void seen.push(m.subject) });
    const declaration = await declared();
    for (let i = 0; i < 3; i++) await publishReport(reportFor(declaration));
    await waitFor('the applied fact', async () => (await facts()).length === 1);
    await waitFor('the reports consumed', async () => (await t.jsm.streams.info(t.names.controlStream)).state.messages === 0);
    const [applied] = await facts();
    expect(applied?.data).toMatchObject({ node: 'lab1', module: 'distribution', version: { definitionVersion: 1, artifact: null }, previous: null });
    await waitFor('the fact published', async () => seen.length === 1);
    expect(seen).toEqual([`${t.names.prefix}.seat.mesh-controller.event.applied`]);
    subscription.unsubscribe();

    // A second controller reading the same log and the same reports again states nothing.
    const again = await t.startController();
    await t.startIngester(again);
    await publishReport(reportFor(declaration));
    await waitFor('the report consumed', async () => (await t.jsm.streams.info(t.names.controlStream)).state.messages === 0);
    expect(await facts()).toHaveLength(1);
  });

  it('acts on no report about a declaration that is not outstanding, and states a report that does not add up', async () => {
    const controller = await t.startController();
    await t.startIngester(controller);
    const declaration = await declared();
    await publishReport(reportFor(declaration, { digest: 'sha256:0000000000000000000000000000000000000000000000000000000000000000' }));
    await publishReport(reportFor(declaration, { resources: [], running: [] }));
    const [mismatch] = await waitFor('the mismatch fact', async () => {
      const found = await facts();
      return found.length === 1 ? found : undefined;
    });
    expect(mismatch?.type).toBe('fact.report-mismatch');
    expect((mismatch?.data as { missing: string[] }).missing).toEqual(declaration.assignments[0]?.resources.map((r) => r.key));
  });

  it('holds the newest report while PostgreSQL is away (older ones from the node it replaces are let go) and applies it once when it returns', async () => {
    const dir = join(meshHome(), 'tmp', uniqueName('pg-'));
    const postgres = { dir, port: await freePort(), secretsDir: join(dir, 'secrets') };
    const started = await startPostgres(postgres);
    try {
      const controller = await t.startController();
      await t.startIngester(controller, { databaseUrl: databaseUrlFor('controller', { databaseUrl: started.url, secretsDir: postgres.secretsDir }, {}) });
      const declaration = await declared();
      await stopPostgres(postgres);
      for (let i = 0; i < 3; i++) await publishReport(reportFor(declaration));
      await new Promise((r) => setTimeout(r, 1_500));
      expect(await facts()).toHaveLength(0);
      // Only a node's newest report matters (report-queue.ts): it waits in CONTROL, and whatever it replaced may be let go.
      expect((await t.jsm.streams.info(t.names.controlStream)).state.messages).toBeGreaterThanOrEqual(1);
      await startPostgres(postgres);
      await waitFor('the reports applied', async () => (await t.jsm.streams.info(t.names.controlStream)).state.messages === 0, 60_000);
      expect((await facts()).map((f) => f.type)).toEqual(['fact.applied']);
    } finally {
      await stopPostgres(postgres).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('starts while PostgreSQL is unreachable, holds reports meanwhile, and takes them once it is back', async () => {
    // The ingester reaches PostgreSQL only through a relay of the test's own, cut before it starts (a controller coming back before it).
    const direct = testDatabaseUrl('controller');
    const relay = await cutProxy(direct);
    const pool = new pg.Pool({ connectionString: direct, max: 1 });
    try {
      await relay.cut();
      const through = new URL(direct);
      through.port = new URL(relay.url).port;
      const controller = await t.startController();
      await t.startIngester(controller, { databaseUrl: through.toString() });
      const declaration = await declared();
      await publishReport(reportFor(declaration));
      await new Promise((r) => setTimeout(r, 1_500));
      expect(await facts()).toHaveLength(0);
      expect((await t.jsm.streams.info(t.names.controlStream)).state.messages).toBe(1);

      await relay.restore();
      await waitFor('the report taken', async () => (await t.jsm.streams.info(t.names.controlStream)).state.messages === 0, 30_000);
      expect((await facts()).map((f) => f.type)).toEqual(['fact.applied']);
      const status = await pool.query(`SELECT report_sequence::int AS report_sequence FROM "status_${t.names.prefix}".node_status WHERE node = 'lab1'`);
      expect(status.rows).toEqual([{ report_sequence: declaration.sequence }]);
    } finally {
      await relay.close();
      await pool.end();
    }
  });
});
