import { describe, expect, it } from '@jest/globals';
import { applyCommits } from '../../src/projections/apply.js';
import type { LogCommit } from '../../src/projections/commit-reader.js';
import type { StallReport } from '../../src/projections/runner.js';
import { meta } from '../helpers/log.js';
import { dropSchemas, eventually, freshSchemas, rowsOf, servingBuild, startTestProjector, useLogAndPool, waitServingAt } from './harness.js';
import { fragile, ledger } from './test-projections.js';

describe('a projection that cannot apply an event', () => {
  const shared = useLogAndPool();

  it('stops at it, says so once with the sequence and SQLSTATE, lets others go on, and resumes when fixed', async () => {
    const { testLog, pool } = shared;
    const schemas = freshSchemas();
    const events = [
      { type: 'test.counted', data: { n: 1 } },
      { type: 'test.counted', data: { n: 2 } },
      { type: 'test.noted', data: { text: 'three' } },
      { type: 'test.counted', data: { n: 4 } },
      { type: 'test.counted', data: { n: 5 } },
    ];
    let version = 0;
    for (const [i, event] of events.entries()) version = (await testLog.log.append('thing.one', [event], version, meta(`c${i}`))).version;

    const stalls: StallReport[] = [];
    const projector = await startTestProjector(testLog, { schemas, projections: [fragile(), ledger()], onStall: (s) => stalls.push(s) });
    try {
      await waitServingAt(pool, schemas, 'ledger', 5);
      const stalled = await eventually('the stall', () => servingBuild(pool, schemas, 'fragile'), (b) => (b?.stall?.attempts ?? 0) >= 3);
      expect(stalled?.checkpoint).toBe(2);
      expect(stalled?.stall).toMatchObject({ seq: 3, type: 'test.noted', sqlstate: '42703' });
      const schema = stalled?.schemaName as string;
      expect(await rowsOf(pool, schema, 'counts', 'seq')).toEqual([
        { seq: '1', n: 1 },
        { seq: '2', n: 2 },
      ]);
      expect(stalls).toEqual([expect.objectContaining({ projection: 'fragile', seq: 3, type: 'test.noted', sqlstate: '42703' })]);

      await pool.query(`ALTER TABLE "${schema}".notes ADD COLUMN tag text`);
      const resumed = await waitServingAt(pool, schemas, 'fragile', 5);
      expect(resumed?.stall).toBeNull();
      expect((await rowsOf(pool, schema, 'counts', 'seq')).map((r) => Number(r.seq))).toEqual([1, 2, 4, 5]);
      expect(await rowsOf(pool, schema, 'notes', 'seq')).toEqual([{ seq: '3', text: 'three', tag: 'x' }]);
      expect(stalls).toHaveLength(1);
    } finally {
      await projector.stop();
      await dropSchemas(pool, schemas);
    }
  });

  it('applies an event it has already applied as a no-op', async () => {
    const { testLog, pool } = shared;
    const schemas = freshSchemas();
    const first = await testLog.log.append('thing.replayed', [{ type: 'test.counted', data: { n: 7 } }], 0, meta('r1'));
    const projector = await startTestProjector(testLog, { schemas, projections: [ledger()] });
    const head = await testLog.log.headSeq();
    try {
      const build = await waitServingAt(pool, schemas, 'ledger', head);
      await projector.stop();
      const before = await rowsOf(pool, build?.schemaName as string, 'entries', 'seq, event_index');
      const commit: LogCommit = { seq: first.seq, events: first.events, pending: 0 };
      const client = await pool.connect();
      try {
        const again = await applyCommits(client, schemas, build as NonNullable<typeof build>, ledger(), [commit, commit]);
        expect(again).toEqual({ commits: 0, events: 0, checkpoint: head });
      } finally {
        client.release();
      }
      expect(await rowsOf(pool, build?.schemaName as string, 'entries', 'seq, event_index')).toEqual(before);
      expect((await servingBuild(pool, schemas, 'ledger'))?.checkpoint).toBe(head);
    } finally {
      await projector.stop().catch(() => undefined);
      await dropSchemas(pool, schemas);
    }
  });
});
