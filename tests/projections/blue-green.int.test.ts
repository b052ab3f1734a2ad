import { describe, expect, it } from '@jest/globals';
import { requestRebuild } from '../../src/projections/builds.js';
import { listBuilds } from '../../src/projections/control.js';
import type { Projector } from '../../src/projections/projector.js';
import { appendMany, dropSchemas, eventually, freshSchemas, rowsOf, servingBuild, startTestProjector, useLogAndPool, waitServingAt } from './harness.js';
import { ledger } from './test-projections.js';

const eventOf = (i: number) =>
  i % 3 === 0 ? { type: 'test.counted', data: { n: i } } : i % 3 === 1 ? { type: 'test.noted', data: { text: `note ${i}` } } : { type: 'test.renamed', data: { first: `f${i}`, last: 'l', title: '' } };

describe('blue/green builds', () => {
  const shared = useLogAndPool();

  it('a version bump builds in a shadow and takes over while clients read: no error, no empty result', async () => {
    const { testLog, pool } = shared;
    const schemas = freshSchemas();
    await appendMany(testLog, 3_000, eventOf);
    const v1 = await startTestProjector(testLog, { schemas, projections: [ledger({ version: 1 })] });
    let v2: Projector | undefined;
    const seen = { reads: 0, errors: [] as string[], empty: 0, v2: 0 };
    let reading = true;
    const reader = async (): Promise<void> => {
      while (reading) {
        try {
          const { rows } = await pool.query(`SELECT * FROM "${schemas.read}".entries ORDER BY seq DESC LIMIT 3`);
          seen.reads++;
          if (rows.length === 0) seen.empty++;
          else if ('written_by' in (rows[0] as object)) seen.v2++;
        } catch (error) {
          seen.errors.push((error as Error).message);
        }
      }
    };
    try {
      await waitServingAt(pool, schemas, 'ledger', await testLog.log.headSeq());
      const readers = [reader(), reader()];
      // A rolling upgrade: the old controller keeps folding live while the new one builds.
      v2 = await startTestProjector(testLog, { schemas, projections: [ledger({ version: 2 })] });
      const live = appendMany(testLog, 300, eventOf, { window: 4 });
      const serving = await eventually('version 2 to serve', () => servingBuild(pool, schemas, 'ledger'), (b) => b?.version === 2);
      await live;
      await waitServingAt(pool, schemas, 'ledger', await testLog.log.headSeq());
      await new Promise((r) => setTimeout(r, 200));
      reading = false;
      await Promise.all(readers);

      expect(seen.errors).toEqual([]);
      expect(seen.empty).toBe(0);
      expect(seen.v2).toBeGreaterThan(0);
      expect(seen.reads).toBeGreaterThan(seen.v2);
      // The old build is gone once the new one serves.
      expect((await listBuilds(pool, schemas, 'ledger')).map((b) => [b.version, b.status])).toEqual([[2, 'serving']]);
      const { rows } = await pool.query(`SELECT count(*)::int AS n FROM pg_namespace WHERE nspname = $1`, [`${schemas.control}_ledger_v1_1`]);
      expect(rows[0]).toEqual({ n: 0 });
      expect(serving?.schemaName).toBe(`${schemas.control}_ledger_v2_1`);
    } finally {
      reading = false;
      await v1.stop();
      await v2?.stop();
      await dropSchemas(pool, schemas);
    }
  });

  it('runs one builder per build across two runtimes; the other takes over when it stops', async () => {
    const { testLog, pool } = shared;
    const schemas = freshSchemas();
    await appendMany(testLog, 500, eventOf);
    const applied = [0, 0];
    const a = await startTestProjector(testLog, { schemas, projections: [ledger({ onApply: () => applied[0]!++ })] });
    const b = await startTestProjector(testLog, { schemas, projections: [ledger({ onApply: () => applied[1]!++ })] });
    try {
      const head = await testLog.log.headSeq();
      await waitServingAt(pool, schemas, 'ledger', head);
      const total = (await pool.query(`SELECT count(*)::int AS n FROM "${schemas.read}".entries`)).rows[0].n as number;
      expect(applied.filter((n) => n > 0)).toHaveLength(1);
      expect(applied[0]! + applied[1]!).toBe(total);

      const [leader, standby] = applied[0]! > 0 ? [a, b] : [b, a];
      await leader.stop();
      await appendMany(testLog, 50, eventOf);
      await waitServingAt(pool, schemas, 'ledger', await testLog.log.headSeq());
      expect(applied.every((n) => n > 0)).toBe(true);
      await standby.stop();
    } finally {
      await a.stop().catch(() => undefined);
      await b.stop().catch(() => undefined);
      await dropSchemas(pool, schemas);
    }
  });

  it('a forced rebuild from scratch equals the incrementally built tables, row for row', async () => {
    const { testLog, pool } = shared;
    const schemas = freshSchemas();
    const projector = await startTestProjector(testLog, { schemas, projections: [ledger()] });
    try {
      // Incrementally: bursts that are caught up in batches and live appends applied one by one.
      for (let burst = 0; burst < 4; burst++) await appendMany(testLog, 400, (i) => eventOf(i + burst), { window: burst % 2 === 0 ? 64 : 2 });
      const head = await testLog.log.headSeq();
      const incremental = await waitServingAt(pool, schemas, 'ledger', head);
      const before = {
        entries: await rowsOf(pool, incremental?.schemaName as string, 'entries', 'seq, event_index'),
        totals: await rowsOf(pool, incremental?.schemaName as string, 'totals', 'aggregate'),
      };
      const rebuild = await requestRebuild(pool, schemas, ledger());
      expect(rebuild.generation).toBe(2);
      const rebuilt = await eventually('the rebuild to serve', () => servingBuild(pool, schemas, 'ledger'), (b) => b?.id === rebuild.id && b.checkpoint >= head);
      expect(await rowsOf(pool, rebuilt?.schemaName as string, 'entries', 'seq, event_index')).toEqual(before.entries);
      expect(await rowsOf(pool, schemas.read, 'totals', 'aggregate')).toEqual(before.totals);
      expect(before.entries.length).toBeGreaterThan(1_000);
    } finally {
      await projector.stop();
      await dropSchemas(pool, schemas);
    }
  });
});
