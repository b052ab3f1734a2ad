import { describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { progressChannel } from '../../src/projections/control.js';
import { defineProjection } from '../../src/projections/projection.js';
import { ident } from '../../src/projections/sql.js';
import { testDatabaseUrl } from '../helpers/database.js';
import { meta } from '../helpers/log.js';
import { uniqueName } from '../helpers/names.js';
import { dropSchemas, freshSchemas, rowsOf, startTestProjector, useLogAndPool, waitServingAt } from './harness.js';
import { ledger } from './test-projections.js';

// Every projection sees every commit, and at the head of a busy log a write per commit per
// projection is what the projector's cost was made of: a round trip to PostgreSQL each, most of
// them only moving a checkpoint. Held open a moment while commits keep coming, a build writes at
// most once per moment — and still applies every commit once, and counts every event once.

/** Handles only renames: the counted events of this test are nothing to it but a checkpoint to move. */
const renamesOnly = () =>
  defineProjection({
    name: 'renames',
    version: 1,
    schemaSql: 'CREATE TABLE renamed (seq bigint NOT NULL);',
    handlers: {
      'test.renamed': async (event, tx) => {
        await tx.client.query(`INSERT INTO ${tx.table('renamed')} (seq) VALUES ($1)`, [event.seq]);
      },
    },
  });

const HEAD_WRITE_EVERY_MS = 50;

describe('projections at the head of a busy log', () => {
  const shared = useLogAndPool();

  it('write at most once per moment while commits keep coming, and apply and count each commit once', async () => {
    const { testLog, pool } = shared;
    const schemas = freshSchemas();
    const aggregate = uniqueName('busy');
    const opening = await testLog.log.append(`thing.${aggregate}`, [{ type: 'test.counted', data: { n: 0 } }], 0, meta(`${aggregate}-0`));
    const projector = await startTestProjector(testLog, { schemas, projections: [ledger(), renamesOnly()], settings: { headWriteEveryMs: HEAD_WRITE_EVERY_MS } });
    const listener = new pg.Client({ connectionString: testDatabaseUrl() });
    try {
      await waitServingAt(pool, schemas, 'ledger', opening.seq);
      await waitServingAt(pool, schemas, 'renames', opening.seq);
      await listener.connect();
      const writes = new Map<string, number>();
      listener.on('notification', (notification) => {
        const { projection } = JSON.parse(notification.payload ?? '{}') as { projection: string };
        writes.set(projection, (writes.get(projection) ?? 0) + 1);
      });
      await listener.query(`LISTEN ${ident(progressChannel(schemas))}`);

      const started = performance.now();
      let version = opening.version;
      for (let n = 1; n <= 150; n++) version = (await testLog.log.append(`thing.${aggregate}`, [{ type: 'test.counted', data: { n } }], version, meta(`${aggregate}-${n}`))).version;
      const head = await testLog.log.headSeq();
      const ledgerBuild = await waitServingAt(pool, schemas, 'ledger', head);
      const renamesBuild = await waitServingAt(pool, schemas, 'renames', head);
      const elapsedMs = performance.now() - started;
      // A notification is delivered with its write's commit; the last ones may still be on their way.
      await new Promise((r) => setTimeout(r, 200));

      // A write at the head, then at most one per moment: however many commits came meanwhile.
      const most = Math.ceil(elapsedMs / HEAD_WRITE_EVERY_MS) + 2;
      expect(writes.get('ledger') ?? 0).toBeLessThanOrEqual(most);
      expect(writes.get('renames') ?? 0).toBeLessThanOrEqual(most);
      expect(writes.get('renames') ?? 0).toBeGreaterThan(0);

      // Every commit applied once, in order.
      const entries = (await rowsOf(pool, ledgerBuild?.schemaName as string, 'entries', 'seq')).filter((row) => row.aggregate === `thing.${aggregate}`);
      expect(entries.map((row) => row.n)).toEqual(Array.from({ length: 151 }, (_, n) => n));
      // The build that wrote no rows moved its checkpoint as far, and counted the same events.
      expect(renamesBuild?.checkpoint).toBe(ledgerBuild?.checkpoint);
      expect(renamesBuild?.eventsApplied).toBe(ledgerBuild?.eventsApplied);
      expect(await rowsOf(pool, renamesBuild?.schemaName as string, 'renamed', 'seq')).toEqual([]);
    } finally {
      await listener.end().catch(() => undefined);
      await projector.stop();
      await dropSchemas(pool, schemas);
    }
  });
});
