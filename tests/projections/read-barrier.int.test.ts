import { describe, expect, it } from '@jest/globals';
import { ReadBarrier } from '../../src/projections/read-barrier.js';
import { meta } from '../helpers/log.js';
import { dropSchemas, freshSchemas, startTestProjector, testDatabaseUrl, useLogAndPool } from './harness.js';
import { fragile, ledger } from './test-projections.js';

describe('reads that wait for the projections to reach a sequence', () => {
  const shared = useLogAndPool();

  it('see every append they waited for, and time out naming a stall', async () => {
    const { testLog, pool } = shared;
    const schemas = freshSchemas();
    const projector = await startTestProjector(testLog, { schemas, projections: [ledger(), fragile()] });
    const barrier = await ReadBarrier.open(testDatabaseUrl(), pool, schemas);
    try {
      let version = 0;
      for (let i = 0; i < 20; i++) {
        const appended = await testLog.log.append('thing.waited', [{ type: 'test.counted', data: { n: i } }], version, meta(`w${i}`));
        version = appended.version;
        await barrier.waitFor(['ledger'], appended.seq, 5_000);
        const { rows } = await pool.query(`SELECT max(seq)::int AS seq FROM "${schemas.read}".entries`);
        expect(rows[0]).toEqual({ seq: appended.seq });
      }
      const noted = await testLog.log.append('thing.waited', [{ type: 'test.noted', data: { text: 'no tag column' } }], version, meta('w-noted'));
      await barrier.waitFor(['ledger'], noted.seq, 5_000);
      await expect(barrier.waitFor(['ledger', 'fragile'], noted.seq, 500)).rejects.toMatchObject({
        code: 'unavailable',
        message: expect.stringMatching(new RegExp(`fragile is at seq ${noted.seq - 1}, stalled at seq ${noted.seq} \\(SQLSTATE 42703\\)`)),
      });
    } finally {
      await barrier.close();
      await projector.stop();
      await dropSchemas(pool, schemas);
    }
  });
});
