import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import type { MeshError } from '../../src/errors.js';
import { meta, openTestLog, type TestLog } from '../helpers/log.js';
import { uniqueName } from '../helpers/names.js';

const counted = (n: number, writer?: string) => ({ type: 'test.counted', data: writer ? { n, writer } : { n } });

const codeOf = async (promise: Promise<unknown>): Promise<{ code: string; error: MeshError }> => {
  try {
    await promise;
  } catch (error) {
    return { code: (error as MeshError).code, error: error as MeshError };
  }
  throw new Error('expected a refusal, the promise resolved');
};

describe('append and read one aggregate', () => {
  let t: TestLog;
  beforeEach(async () => {
    t = await openTestLog();
  });
  afterEach(async () => t.close());

  it('stamps the whole envelope and reads it back with gap-free versions', async () => {
    const aggregate = `counter.${uniqueName('c')}`;
    const first = await t.log.append(aggregate, [counted(1)], 0, { commandId: 'cmd-1', actor: 'operator:ada', correlationId: 'conv-9' });
    const second = await t.log.append(aggregate, [counted(2)], 1, { commandId: 'cmd-2', actor: 'operator:ada', causationId: 'cmd-1' });
    expect(first).toMatchObject({ version: 1, expectedVersion: 0, duplicate: false });
    expect(second).toMatchObject({ version: 2, expectedVersion: 1, duplicate: false });

    const history = await t.another().readAggregate(aggregate);
    expect(history.version).toBe(2);
    expect(history.events.map((e) => e.version)).toEqual([1, 2]);
    const [e1, e2] = history.events;
    expect(e1).toMatchObject({
      type: 'test.counted',
      schemaVersion: 1,
      aggregate,
      actor: 'operator:ada',
      commandId: 'cmd-1',
      causationId: 'cmd-1',
      correlationId: 'conv-9',
      data: { n: 1 },
      seq: first.seq,
    });
    expect(e2).toMatchObject({ commandId: 'cmd-2', causationId: 'cmd-1', correlationId: 'cmd-2', data: { n: 2 } });
    expect(e1?.id).not.toEqual(e2?.id);
    expect(Number.isNaN(Date.parse(e1?.time ?? ''))).toBe(false);
  });

  it('stores the events one command decided as one commit: all or nothing, consecutive versions', async () => {
    const aggregate = `counter.${uniqueName('c')}`;
    const before = (await t.jsm.streams.info(t.settings.stream)).state.messages;
    const result = await t.log.append(aggregate, [counted(1), counted(2), { type: 'test.noted', data: { text: 'three' } }], 0, meta('batch-1'));
    expect(result.version).toBe(3);
    expect(result.events.map((e) => [e.seq, e.index, e.version])).toEqual([
      [result.seq, 0, 1],
      [result.seq, 1, 2],
      [result.seq, 2, 3],
    ]);
    expect((await t.jsm.streams.info(t.settings.stream)).state.messages).toBe(before + 1);

    // One malformed event refuses the whole command: nothing of it is stored.
    const refused = await codeOf(t.log.append(aggregate, [counted(4), { type: 'test.noted', data: { text: '' } }], 3, meta('batch-2')));
    expect(refused.code).toBe('validation');
    expect(refused.error.details.field).toBe('events.1.data.text');
    const history = await t.log.readAggregate(aggregate);
    expect(history.version).toBe(3);
  });

  it('refuses a stale expectation with ConcurrencyError naming expected and actual', async () => {
    const aggregate = `counter.${uniqueName('c')}`;
    await t.log.append(aggregate, [counted(1), counted(2)], 0, meta(uniqueName('cmd')));

    const behind = await codeOf(t.log.append(aggregate, [counted(3)], 1, meta(uniqueName('cmd'))));
    expect(behind.code).toBe('concurrency');
    expect(behind.error).toMatchObject({ aggregate, expected: 1, actual: 2 });
    expect(behind.error.message).toContain('expected version 1');

    const ahead = await codeOf(t.log.append(aggregate, [counted(3)], 7, meta(uniqueName('cmd'))));
    expect(ahead.error).toMatchObject({ expected: 7, actual: 2 });

    const newAggregateTaken = await codeOf(t.another().append(aggregate, [counted(3)], 0, meta(uniqueName('cmd'))));
    expect(newAggregateTaken.error).toMatchObject({ code: 'concurrency', expected: 0, actual: 2 });

    // A writer whose cached head went stale is refused by the server, not by its own cache.
    const other = t.another();
    await other.readAggregate(aggregate);
    await t.log.append(aggregate, [counted(3)], 2, meta(uniqueName('cmd')));
    const stale = await codeOf(other.append(aggregate, [counted(4)], 2, meta(uniqueName('cmd'))));
    expect(stale.error).toMatchObject({ code: 'concurrency', expected: 2, actual: 3 });
  });

  it('with an expected log sequence, refuses an append if anything landed anywhere since', async () => {
    const a = `counter.${uniqueName('a')}`;
    const b = `counter.${uniqueName('b')}`;
    const { seq } = await t.log.append(a, [counted(1)], 0, meta(uniqueName('cmd')));
    await t.log.append(b, [counted(1)], 0, meta(uniqueName('cmd')));
    const moved = await codeOf(t.log.append(a, [counted(2)], 1, meta(uniqueName('cmd')), { expectedLogSeq: seq }));
    expect(moved.code).toBe('concurrency');
    expect(moved.error.details).toMatchObject({ aggregate: a, expectedSeq: seq });
    expect(moved.error.message).toContain(`decided against the log at seq ${seq}`);
    const head = await t.log.headSeq();
    expect((await t.log.append(a, [counted(2)], 1, meta(uniqueName('cmd')), { expectedLogSeq: head })).seq).toBe(head + 1);
  });

  it('lets exactly one of two concurrent writers win', async () => {
    const aggregate = `counter.${uniqueName('c')}`;
    await t.log.append(aggregate, [counted(0)], 0, meta(uniqueName('cmd')));
    const a = t.another();
    const b = t.another();
    const outcomes = await Promise.allSettled([
      a.append(aggregate, [counted(1, 'a')], 1, meta(uniqueName('a'))),
      b.append(aggregate, [counted(1, 'b')], 1, meta(uniqueName('b'))),
    ]);
    const won = outcomes.filter((o) => o.status === 'fulfilled');
    const lost = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect((lost[0]?.reason as MeshError).code).toBe('concurrency');
    expect(lost[0]?.reason).toMatchObject({ expected: 1, actual: 2 });
    expect((await t.log.readAggregate(aggregate)).version).toBe(2);
  });

  it('keeps every aggregate gap-free with 20 writers racing on 5 aggregates', async () => {
    const aggregates = Array.from({ length: 5 }, () => `counter.${uniqueName('race')}`);
    const accepted = new Map<string, number[]>(aggregates.map((a) => [a, []]));
    let conflicts = 0;
    const appendsPerWriter = 15;

    const writer = async (w: number): Promise<void> => {
      const log = t.another();
      for (let i = 0; i < appendsPerWriter; i++) {
        const aggregate = aggregates[(w + i) % aggregates.length] as string;
        for (;;) {
          const { version } = await log.readAggregate(aggregate);
          try {
            const result = await log.append(aggregate, [counted(i, `w${w}`)], version, meta(`w${w}-${i}`));
            accepted.get(aggregate)?.push(result.expectedVersion);
            break;
          } catch (error) {
            if ((error as MeshError).code !== 'concurrency') throw error;
            conflicts++;
          }
        }
      }
    };
    await Promise.all(Array.from({ length: 20 }, (_, w) => writer(w)));

    let total = 0;
    for (const aggregate of aggregates) {
      const history = await t.log.readAggregate(aggregate);
      const versions = history.events.map((e) => e.version);
      expect(versions).toEqual(versions.map((_, i) => i + 1));
      const expectations = [...(accepted.get(aggregate) ?? [])].sort((x, y) => x - y);
      // No expectation was accepted twice: each version 0..n-1 was built on exactly once.
      expect(expectations).toEqual(versions.map((_, i) => i));
      total += history.events.length;
    }
    expect(total).toBe(20 * appendsPerWriter);
    // The race was real: some writers lost and retried.
    expect(conflicts).toBeGreaterThan(0);
  });
});

describe('append refuses malformed input, naming the field, and stores nothing', () => {
  let t: TestLog;
  beforeEach(async () => {
    t = await openTestLog();
  });
  afterEach(async () => t.close());

  it.each([
    ['a data field of the wrong type', 'counter.x1', [{ type: 'test.counted', data: { n: 'one' } }], 0, meta('c1'), 'events.0.data.n'],
    ['an unknown data field', 'counter.x2', [{ type: 'test.counted', data: { n: 1, extra: true } }], 0, meta('c2'), 'events.0.data'],
    ['an unknown event type', 'counter.x3', [{ type: 'test.vanished', data: {} }], 0, meta('c3'), 'events.0.type'],
    ['no events', 'counter.x4', [], 0, meta('c4'), 'events'],
    ['an aggregate with no id', 'counter', [{ type: 'test.counted', data: { n: 1 } }], 0, meta('c5'), 'aggregate'],
    ['an aggregate that is a wildcard', 'counter.>', [{ type: 'test.counted', data: { n: 1 } }], 0, meta('c6'), 'aggregate'],
    ['a negative expected version', 'counter.x7', [{ type: 'test.counted', data: { n: 1 } }], -1, meta('c7'), 'expectedVersion'],
    ['a command without an actor', 'counter.x8', [{ type: 'test.counted', data: { n: 1 } }], 0, { commandId: 'c8', actor: '' }, 'metadata.actor'],
    ['a command id with spaces', 'counter.x9', [{ type: 'test.counted', data: { n: 1 } }], 0, { commandId: 'c 9', actor: 'a' }, 'metadata.commandId'],
  ] as const)('%s', async (_name, aggregate, events, expected, metadata, field) => {
    const refused = await codeOf(t.log.append(aggregate, events, expected, metadata));
    expect(refused.code).toBe('validation');
    expect(refused.error.details.field).toBe(field);
    expect((await t.jsm.streams.info(t.settings.stream)).state.messages).toBe(0);
  });
});
