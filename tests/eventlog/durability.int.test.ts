import { afterEach, describe, expect, it } from '@jest/globals';
import type { AppendResult } from '../../src/adapters/eventlog/event-log.js';
import type { StoredEvent } from '../../src/domain/events/envelope.js';
import { meta, openTestLog, type TestLog } from '../helpers/log.js';
import { uniqueName } from '../helpers/names.js';
import { scratchNats } from '../helpers/scratch-nats.js';

describe('the log across a server that dies', () => {
  let server: Awaited<ReturnType<typeof scratchNats>>;
  let t: TestLog;
  afterEach(async () => {
    await t?.close().catch(() => undefined);
    await server?.remove();
  });

  it('keeps every acknowledged append, in order, when nats-server is killed with SIGKILL', async () => {
    server = await scratchNats('sigkill');
    t = await openTestLog({ url: server.url });
    const aggregates = Array.from({ length: 40 }, () => `counter.${uniqueName('k')}`);
    const acknowledged: AppendResult[] = [];
    for (let round = 0; round < 10; round++) {
      const results = await Promise.all(aggregates.map((a, i) => t.log.append(a, [{ type: 'test.counted', data: { n: round * 100 + i } }], round, meta(`${a}-${round}`))));
      acknowledged.push(...results);
    }
    // Appends in flight when the server dies may or may not land; the acknowledged ones must.
    const reconnects = t.reconnects();
    const impatient = t.another({ timeoutMs: 300 });
    await Promise.all(aggregates.map((a) => impatient.readAggregate(a)));
    const inFlight = aggregates.map((a) => impatient.append(a, [{ type: 'test.counted', data: { n: -1 } }], 10, meta(`${a}-flight`)).catch(() => undefined));
    await server.kill();
    await Promise.all(inFlight);
    await server.restart();
    await t.reconnected(reconnects);

    const read: StoredEvent[] = [];
    for await (const event of t.another().read()) read.push(event);
    const bySeq = new Map(read.map((e) => [e.seq, e]));
    for (const ack of acknowledged) {
      expect(bySeq.get(ack.seq)).toMatchObject({ aggregate: ack.aggregate, version: ack.version, commandId: ack.events[0]?.commandId });
    }
    const seqs = read.map((e) => e.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
    for (const aggregate of aggregates) {
      const versions = read.filter((e) => e.aggregate === aggregate).map((e) => e.version);
      expect(versions.slice(0, 10)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
      expect(versions).toEqual(versions.map((_, i) => i + 1));
    }
  });

  it('follows from sequence N across a server restart with no gap and no duplicate', async () => {
    server = await scratchNats('follow');
    t = await openTestLog({ url: server.url });
    const aggregate = `counter.${uniqueName('f')}`;
    let version = 0;
    const appendMany = async (count: number): Promise<void> => {
      for (let i = 0; i < count; i++) version = (await t.log.append(aggregate, [{ type: 'test.counted', data: { n: version + 1 } }], version, meta(`${aggregate}-${version + 1}`))).version;
    };
    await appendMany(30);

    const fromSeq = 11;
    const seen: number[] = [];
    let caughtUpAt: number | undefined;
    const follower = t.another();
    const abort = new AbortController();
    const following = (async () => {
      for await (const item of follower.follow({ fromSeq, signal: abort.signal })) {
        if (item.kind === 'caught-up') caughtUpAt = item.seq;
        else if (item.kind === 'event') seen.push(item.event.seq);
        else throw new Error(`the follower was ${item.kind} at a commit of an honest log`);
        if (seen.length === 50) abort.abort();
      }
    })();
    await waitUntil(() => seen.length >= 20);
    expect(caughtUpAt).toBe(30);

    const reconnects = t.reconnects();
    await server.stop();
    await server.restart();
    await t.reconnected(reconnects);
    await appendMany(30);
    await following;
    expect(seen).toEqual(Array.from({ length: 50 }, (_, i) => fromSeq + i));
  });
});

const waitUntil = async (condition: () => boolean, timeoutMs = 20_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
};
