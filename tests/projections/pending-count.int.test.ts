import { describe, expect, it } from '@jest/globals';
import type { JsMsg } from '@nats-io/jetstream';
import { CommitReader, type ConsumedMessage } from '../../src/projections/commit-reader.js';
import { allHealthy, projectionsStatus } from '../../src/projections/status.js';
import { meta } from '../helpers/log.js';
import { testRegistry } from '../helpers/test-events.js';
import { dropSchemas, freshSchemas, rowsOf, startTestProjector, useLogAndPool, waitServingAt } from './harness.js';
import { ledger } from './test-projections.js';

// The server's pending count is a hint. Seen after PostgreSQL came back: a consumer whose count
// stayed at 2–3 after the last message, and projections that waited for the rest of a batch that
// was never coming, "serving", their lag frozen. Here the real reader over the real log is told a
// count three too high on every delivery; the build must still apply each commit as it arrives.

/** The real reader, seeing every delivery's pending count three too high. */
class OverCountingReader extends CommitReader {
  protected override delivered(messages: AsyncIterable<JsMsg>): AsyncIterable<ConsumedMessage> {
    return (async function* () {
      for await (const message of messages) yield { seq: message.seq, subject: message.subject, data: message.data, headers: message.headers, info: { pending: message.info.pending + 3 } };
    })();
  }
}

/** The real reader, handed nothing after `lastSeq`: a consumer that went quiet while the log moved on. */
class GoneQuietReader extends CommitReader {
  lastSeq = Number.POSITIVE_INFINITY;
  protected override delivered(messages: AsyncIterable<JsMsg>): AsyncIterable<ConsumedMessage> {
    const passes = (seq: number): boolean => seq <= this.lastSeq;
    return (async function* () {
      for await (const message of messages) if (passes(message.seq)) yield message;
    })();
  }
}

describe('a projection whose reader is told more is coming when nothing is', () => {
  const shared = useLogAndPool();

  it('applies what it was delivered, catching up and live, whatever the count says', async () => {
    const { testLog, pool } = shared;
    const schemas = freshSchemas();
    let version = 0;
    for (let i = 1; i <= 5; i++) version = (await testLog.log.append('thing.counted', [{ type: 'test.counted', data: { n: i } }], version, meta(`pc-${i}`))).version;
    const reader = new OverCountingReader(testLog.nc, { stream: testLog.settings.stream, subjectPrefix: testLog.settings.subjectPrefix, registry: testRegistry() });
    const projector = await startTestProjector(testLog, { schemas, projections: [ledger()], reader });
    try {
      const caughtUp = await waitServingAt(pool, schemas, 'ledger', await testLog.log.headSeq(), 15_000);
      // Live, one commit at a time: each is applied although the count says three more follow it.
      for (let i = 6; i <= 8; i++) {
        const appended = await testLog.log.append('thing.counted', [{ type: 'test.counted', data: { n: i } }], version, meta(`pc-${i}`));
        version = appended.version;
        await waitServingAt(pool, schemas, 'ledger', appended.seq, 15_000);
      }
      const rows = await rowsOf(pool, caughtUp?.schemaName as string, 'entries', 'seq');
      expect(rows.map((r) => r.n)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    } finally {
      await projector.stop();
      await dropSchemas(pool, schemas);
    }
  });

  it('is named "not moving" when it applies nothing while the log holds more, and is not healthy', async () => {
    const { testLog, pool } = shared;
    const schemas = freshSchemas();
    const reader = new GoneQuietReader(testLog.nc, { stream: testLog.settings.stream, subjectPrefix: testLog.settings.subjectPrefix, registry: testRegistry() });
    const first = await testLog.log.append('thing.quiet', [{ type: 'test.counted', data: { n: 1 } }], 0, meta('quiet-1'));
    reader.lastSeq = first.seq;
    const projector = await startTestProjector(testLog, { schemas, projections: [ledger()], reader });
    try {
      await waitServingAt(pool, schemas, 'ledger', first.seq, 15_000);
      const second = await testLog.log.append('thing.quiet', [{ type: 'test.counted', data: { n: 2 } }], first.version, meta('quiet-2'));
      const caughtUp = await projectionsStatus(pool, schemas, reader, [ledger()], { notMovingAfterMs: 60_000 });
      expect(caughtUp[0]).toMatchObject({ lagCommits: second.seq - first.seq, notMoving: null, problem: null });
      await new Promise((r) => setTimeout(r, 1_500));
      const states = await projectionsStatus(pool, schemas, reader, [ledger()], { notMovingAfterMs: 1_000 });
      expect(states[0]?.status).toBe('serving');
      expect(states[0]?.notMoving?.seconds).toBeGreaterThanOrEqual(1);
      expect(states[0]?.problem).toMatch(new RegExp(`^ledger is not moving: it has applied nothing since \\S+ \\(\\d+ s\\) while the log holds ${second.seq - first.seq} commits? after its checkpoint \\(seq ${first.seq} of ${second.seq}\\)$`));
      expect(allHealthy(states)).toBe(false);
    } finally {
      await projector.stop();
      await dropSchemas(pool, schemas);
    }
  });
});
