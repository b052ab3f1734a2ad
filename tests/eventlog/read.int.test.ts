import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { headers as natsHeaders } from '@nats-io/nats-core';
import { jetstream } from '@nats-io/jetstream';
import type { FollowItem } from '../../src/adapters/eventlog/event-log.js';
import type { MeshError } from '../../src/errors.js';
import { collect, meta, openTestLog, type TestLog } from '../helpers/log.js';
import { uniqueName } from '../helpers/names.js';

describe('reading the whole log', () => {
  let t: TestLog;
  beforeEach(async () => {
    t = await openTestLog();
  });
  afterEach(async () => t.close());

  it('reads from a sequence, in order, and filters by aggregate kind or id', async () => {
    const seat = `seat.${uniqueName('s')}`;
    const node = `node.${uniqueName('n')}`;
    await t.log.append(seat, [{ type: 'test.counted', data: { n: 1 } }], 0, meta('a'));
    await t.log.append(node, [{ type: 'test.counted', data: { n: 2 } }, { type: 'test.noted', data: { text: 'x' } }], 0, meta('b'));
    await t.log.append(seat, [{ type: 'test.counted', data: { n: 3 } }], 1, meta('c'));

    const all = await collect(t.log.read());
    expect(all.map((e) => [e.seq, e.index, e.aggregate])).toEqual([
      [1, 0, seat],
      [2, 0, node],
      [2, 1, node],
      [3, 0, seat],
    ]);
    expect((await collect(t.log.read({ fromSeq: 2 }))).map((e) => e.seq)).toEqual([2, 2, 3]);
    expect((await collect(t.log.read({ aggregate: 'seat' }))).map((e) => e.seq)).toEqual([1, 3]);
    expect((await collect(t.log.read({ aggregate: node }))).map((e) => e.type)).toEqual(['test.counted', 'test.noted']);
    expect(await collect(t.log.read({ fromSeq: 99 }))).toEqual([]);
    expect(await collect(t.log.read({ aggregate: 'build' }))).toEqual([]);
    expect(await t.log.headSeq()).toBe(3);
  });

  it('follows: catches up, says so, then tails, with no gap or duplicate at the seam', async () => {
    const aggregates = Array.from({ length: 4 }, () => `counter.${uniqueName('f')}`);
    const versions = new Map(aggregates.map((a) => [a, 0]));
    const appendRound = async (round: number): Promise<void> => {
      await Promise.all(
        aggregates.map(async (a) => {
          const result = await t.log.append(a, [{ type: 'test.counted', data: { n: round } }], versions.get(a) ?? 0, meta(`${a}-${round}`));
          versions.set(a, result.version);
        }),
      );
    };
    for (let round = 0; round < 50; round++) await appendRound(round);

    const items: FollowItem[] = [];
    const abort = new AbortController();
    const following = (async () => {
      for await (const item of t.another().follow({ fromSeq: 1, signal: abort.signal })) {
        items.push(item);
        if (items.filter((i) => i.kind === 'event').length === 400) abort.abort();
      }
    })();
    // Writers keep appending while the follower catches up: the seam is crossed under load.
    for (let round = 50; round < 100; round++) await appendRound(round);
    await following;

    const seqs = items.flatMap((i) => (i.kind === 'event' ? [i.event.seq] : []));
    expect(seqs).toEqual(Array.from({ length: 400 }, (_, i) => i + 1));
    const markers = items.filter((i) => i.kind === 'caught-up');
    expect(markers).toHaveLength(1);
    expect((markers[0] as { seq: number }).seq).toBeGreaterThanOrEqual(200);
  });

  it('says it is caught up at once when there is nothing to catch up on', async () => {
    const abort = new AbortController();
    const items: FollowItem[] = [];
    const following = (async () => {
      for await (const item of t.log.follow({ signal: abort.signal })) {
        items.push(item);
        if (item.kind === 'event') abort.abort();
      }
    })();
    await new Promise((r) => setTimeout(r, 200));
    expect(items).toEqual([{ kind: 'caught-up', seq: 0 }]);
    await t.log.append(`counter.${uniqueName('c')}`, [{ type: 'test.counted', data: { n: 1 } }], 0, meta('late'));
    await following;
    expect(items.map((i) => i.kind)).toEqual(['caught-up', 'event']);
  });

  it('stops on a malformed message with an error naming its sequence and field; it never skips it', async () => {
    const aggregate = `counter.${uniqueName('c')}`;
    await t.log.append(aggregate, [{ type: 'test.counted', data: { n: 1 } }], 0, meta('good'));
    const js = jetstream(t.nc);
    const subject = `${t.settings.subjectPrefix}.${aggregate}`;
    const forged = {
      firstVersion: 2,
      events: [{ id: 'x', type: 'test.counted', schemaVersion: 1, aggregate, time: new Date().toISOString(), actor: 'a', commandId: 'c', causationId: 'c', correlationId: 'c', data: { n: 'two' } }],
    };
    await js.publish(subject, JSON.stringify(forged));
    await js.publish(subject, 'not json', { headers: natsHeaders() });

    const refusal = await collect(t.another().read()).catch((error: MeshError) => error);
    expect(refusal).toMatchObject({ code: 'corrupt_event', details: { seq: 2, field: 'events.0.data.n' } });
    expect((refusal as MeshError).message).toContain('seq 2');
    const readAggregate = await t.another().readAggregate(aggregate).catch((error: MeshError) => error);
    expect(readAggregate).toMatchObject({ code: 'corrupt_event', details: { seq: 2 } });
    const garbage = await collect(t.log.read({ fromSeq: 3 })).catch((error: MeshError) => error);
    expect(garbage).toMatchObject({ code: 'corrupt_event', details: { seq: 3, field: 'payload' } });
    // A commit on the wrong aggregate's subject is refused too.
    await js.publish(`${t.settings.subjectPrefix}.counter.elsewhere`, JSON.stringify({ ...forged, events: [{ ...forged.events[0], data: { n: 2 } }] }));
    const misplaced = await collect(t.log.read({ fromSeq: 4 })).catch((error: MeshError) => error);
    expect(misplaced).toMatchObject({ code: 'corrupt_event', details: { seq: 4, field: 'events.0.aggregate' } });
  });
});

