import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { jetstream } from '@nats-io/jetstream';
import { commitHash, GENESIS_PREV, KEY_HEADER, linkOf, PREV_HEADER, sealHeaders, SIG_HEADER, SINCE_HEADER } from '../../src/adapters/eventlog/chain.js';
import { rawOf } from '../../src/adapters/eventlog/chain-reader.js';
import { encodeCommit } from '../../src/adapters/eventlog/codec.js';
import type { FollowItem } from '../../src/adapters/eventlog/event-log.js';
import { JetStreamEventLog } from '../../src/adapters/eventlog/jetstream-log.js';
import { LogWriter } from '../../src/adapters/eventlog/log-writer.js';
import { newIdentity, verifyBytes } from '../../src/adapters/identity.js';
import { fromBase64 } from '../../src/adapters/key-files.js';
import type { Commit } from '../../src/domain/events/envelope.js';
import { LogVoided, voidAggregate } from '../../src/domain/log/events.js';
import type { MeshError } from '../../src/errors.js';
import { collect, meta, openTestLog, type TestLog } from '../helpers/log.js';
import { uniqueName } from '../helpers/names.js';
import { testRegistry } from '../helpers/test-events.js';

// Every commit carries the hash of the one before and the writer's signature over its own hash;
// the first names the writer's key. Readers of the whole log check both, readers of one aggregate
// the signature; a commit that fails either holds them until an operator's void, then they pass it
// and say so. The writer chains through whatever the log holds, also a commit it did not write.

const counted = (n: number) => ({ type: 'test.counted', data: { n } });

/** Every message of the stream with its chain headers, as stored. */
const stored = async (t: TestLog) => {
  const head = await t.log.headSeq();
  const messages = [];
  for (let seq = 1; seq <= head; seq++) {
    const message = await t.jsm.streams.getMessage(t.settings.stream, { seq });
    if (!message) throw new Error(`no message at seq ${seq}`);
    messages.push({ seq, subject: message.subject, data: message.data, prev: message.header.get(PREV_HEADER), sig: message.header.get(SIG_HEADER), key: message.header.get(KEY_HEADER), since: message.header.get(SINCE_HEADER), link: linkOf(rawOf(message)) });
  }
  return messages;
};

/** A commit that reads as a test commit would, on `aggregate`. */
const lookalike = (aggregate: string, n: number): Uint8Array =>
  encodeCommit({
    firstVersion: 1,
    events: [{ id: uniqueName('e'), type: 'test.counted', schemaVersion: 1, aggregate, time: new Date().toISOString(), actor: 'test', commandId: uniqueName('c'), causationId: 'c', correlationId: 'c', data: { n } }],
  } as Commit);

describe('the chain: every commit signed by the writer and linked to the one before', () => {
  let t: TestLog;
  beforeEach(async () => {
    t = await openTestLog();
  });
  afterEach(async () => t.close());

  it('writes the link, the signature and, on the first commit, the writer key; each verifies', async () => {
    const a = `counter.${uniqueName('a')}`;
    const b = `counter.${uniqueName('b')}`;
    await t.log.append(a, [counted(1)], 0, meta('c1'));
    await t.log.append(b, [counted(2), counted(3)], 0, meta('c2'));
    await t.log.append(a, [counted(4)], 1, meta('c3'), { expectedLogSeq: 2 });

    const messages = await stored(t);
    expect(messages.map((m) => m.key)).toEqual([t.key.publicKey, '', '']);
    // Each signature also answers for the commits the writer wrote before it in this process.
    expect(messages.map((m) => m.since)).toEqual(['', '1', '1']);
    let before = GENESIS_PREV;
    for (const message of messages) {
      expect(fromBase64(message.prev)).toEqual(before);
      const hash = commitHash(before, message.subject, message.seq, message.data, message.link.since);
      expect(hash).toEqual(message.link.hash);
      expect(verifyBytes(t.key.publicKey, hash, message.sig)).toBe(true);
      // Moved to another sequence or another subject, the same signature no longer holds.
      expect(verifyBytes(t.key.publicKey, commitHash(before, message.subject, message.seq + 1, message.data, message.link.since), message.sig)).toBe(false);
      expect(verifyBytes(t.key.publicKey, commitHash(before, `${message.subject}x`, message.seq, message.data, message.link.since), message.sig)).toBe(false);
      before = hash;
    }
    expect((await collect(t.another().read())).map((e) => e.data)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }]);
  });

  it('keeps one chain when two processes append at once, each re-reading the head the other moved', async () => {
    const other = t.another();
    const aggregates = Array.from({ length: 6 }, () => `counter.${uniqueName('r')}`);
    await Promise.all(
      aggregates.map(async (aggregate, i) => {
        const log = i % 2 === 0 ? t.log : other;
        for (let v = 0; v < 5; v++) await log.append(aggregate, [counted(v)], v, meta(`${aggregate}-${v}`));
      }),
    );
    const messages = await stored(t);
    expect(messages).toHaveLength(30);
    let before = GENESIS_PREV;
    for (const message of messages) {
      expect(fromBase64(message.prev)).toEqual(before);
      before = message.link.hash;
    }
    // Each writer checked what the other appended before signing after it: its stretch goes on
    // through the other's commits instead of starting again after them.
    expect(Number(messages.at(-1)?.since)).toBeLessThan(10);
    expect(await collect(t.another().read())).toHaveLength(30);
  });

  it('follows from beyond the head: the first commit it is given links to the one before it, stored later', async () => {
    await t.log.append(`counter.${uniqueName('a')}`, [counted(1)], 0, meta(uniqueName('c')));
    const items: FollowItem[] = [];
    const abort = new AbortController();
    const following = (async () => {
      for await (const item of t.another().follow({ fromSeq: 3, signal: abort.signal })) {
        items.push(item);
        if (item.kind === 'event' && item.event.seq === 4) abort.abort();
      }
    })();
    for (let i = 0; i < 3; i++) await t.log.append(`counter.${uniqueName('b')}`, [counted(i)], 0, meta(uniqueName('c')));
    await following;
    expect(items.map((i) => (i.kind === 'event' ? i.event.seq : i.kind))).toEqual(['caught-up', 3, 4]);
  });

  it('still refuses a mesh command decided against a log that has moved, and an aggregate that has moved', async () => {
    const a = `counter.${uniqueName('a')}`;
    const { seq } = await t.log.append(a, [counted(1)], 0, meta(uniqueName('c')));
    await t.another().append(`counter.${uniqueName('b')}`, [counted(1)], 0, meta(uniqueName('c')));
    const moved = await t.log.append(a, [counted(2)], 1, meta(uniqueName('c')), { expectedLogSeq: seq }).catch((error: MeshError) => error);
    expect(moved).toMatchObject({ code: 'concurrency', details: { expectedSeq: seq } });
    const stale = await t.log.append(a, [counted(2)], 0, meta(uniqueName('c'))).catch((error: MeshError) => error);
    expect(stale).toMatchObject({ code: 'concurrency', details: { expected: 0, actual: 1 } });
    // Without an expectation of the whole log, the writer follows the head the other process moved.
    expect((await t.log.append(a, [counted(2)], 1, meta(uniqueName('c')))).seq).toBe(seq + 2);
  });

  it('refuses to append without a writer, and to a log begun with another key, saying which', async () => {
    await t.log.append(`counter.${uniqueName('a')}`, [counted(1)], 0, meta(uniqueName('c')));
    const reader = new JetStreamEventLog(t.nc, { ...t.settings, registry: testRegistry() });
    const keyless = await reader.append(`counter.${uniqueName('a')}`, [counted(1)], 0, meta(uniqueName('c'))).catch((error: MeshError) => error);
    expect(keyless).toMatchObject({ code: 'refused' });
    expect((keyless as MeshError).message).toContain('holds no writer key');
    const stranger = new JetStreamEventLog(t.nc, { ...t.settings, registry: testRegistry(), writer: new LogWriter(t.nc, { stream: t.settings.stream, key: newIdentity(), keySource: 'a stranger' }) });
    const foreign = await stranger.append(`counter.${uniqueName('a')}`, [counted(1)], 0, meta(uniqueName('c'))).catch((error: MeshError) => error);
    expect(foreign).toMatchObject({ code: 'refused', details: { logKey: t.key.publicKey } });
    expect((foreign as MeshError).message).toContain('a stranger');
    expect(await t.log.headSeq()).toBe(1);
  });

  it('holds every reader at a commit published around the writer, then passes it once voided, saying so; the chain runs through it', async () => {
    const aggregate = `counter.${uniqueName('c')}`;
    await t.log.append(aggregate, [counted(1)], 0, meta('before'));
    const subject = `${t.settings.subjectPrefix}.${aggregate}`;
    // Twenty bytes that are not JSON, straight onto the log's subject.
    const garbage = new TextEncoder().encode('not json, 20 bytes!!');
    expect(garbage.length).toBe(20);
    const garbageSeq = (await jetstream(t.nc).publish(subject, garbage)).seq;
    // The writer chains through it: its next commit links to the hash of those very bytes.
    const after = await t.log.append(`counter.${uniqueName('d')}`, [counted(3)], 0, meta('after'));
    const next = await t.jsm.streams.getMessage(t.settings.stream, { seq: after.seq });
    expect(fromBase64(next?.header.get(PREV_HEADER) ?? '')).toEqual(commitHash(new Uint8Array(0), subject, garbageSeq, garbage));
    // … and answers for nothing before it: the writer could not check those bytes.
    expect(next?.header.get(SINCE_HEADER)).toBe('');

    const whole = await collect(t.another().read()).catch((error: MeshError) => error);
    expect(whole).toMatchObject({ code: 'corrupt_event', details: { seq: garbageSeq, field: 'payload' } });
    expect((whole as MeshError).message).toContain(`mesh log void ${garbageSeq}`);
    expect((whole as MeshError).message).toContain('no writer signature');
    const one = await t.another().readAggregate(aggregate).catch((error: MeshError) => error);
    expect(one).toMatchObject({ code: 'corrupt_event', details: { seq: garbageSeq } });

    const items: FollowItem[] = [];
    const abort = new AbortController();
    const following = (async () => {
      for await (const item of t.another({ holdRetry: { initialMs: 50, maxMs: 200 } }).follow({ signal: abort.signal })) {
        items.push(item);
        if (item.kind === 'event' && item.event.seq === after.seq) abort.abort();
      }
    })();
    await waitUntil(() => items.some((i) => i.kind === 'held'));
    expect(items.filter((i) => i.kind === 'held')).toEqual([{ kind: 'held', seq: garbageSeq, aggregate, problem: expect.stringContaining('not UTF-8 JSON') }]);

    const voided = await t.log.append(voidAggregate(garbageSeq), [{ type: LogVoided.type, data: { seq: garbageSeq, aggregate, reason: 'published around the writer', problem: 'not JSON' } }], 0, meta('void', 'operator:ada'));
    await following;
    expect(items.map((i) => (i.kind === 'event' ? `event ${i.event.seq}` : i.kind === 'passed' ? `passed ${i.commit.seq}` : i.kind))).toEqual([
      'event 1',
      'held',
      `passed ${garbageSeq}`,
      `event ${after.seq}`,
      'caught-up',
    ]);
    expect(items.find((i) => i.kind === 'passed')).toMatchObject({ commit: { seq: garbageSeq, voidSeq: voided.seq, actor: 'operator:ada', reason: 'published around the writer' } });

    const told: number[] = [];
    const events = await collect(t.another({ onPassed: (p) => told.push(p.seq) }).read());
    expect(events.map((e) => e.seq)).toEqual([1, after.seq, voided.seq]);
    expect(told).toEqual([garbageSeq]);
    expect((await t.another().readAggregate(aggregate, { onPassed: (p) => told.push(p.seq) })).version).toBe(1);
    expect(told).toEqual([garbageSeq, garbageSeq]);
  });

  it('holds readers at a well-formed commit signed with another key, or linked to the wrong commit', async () => {
    const aggregate = `counter.${uniqueName('c')}`;
    const first = await t.log.append(aggregate, [counted(1)], 0, meta('one'));
    const js = jetstream(t.nc);
    const subject = `${t.settings.subjectPrefix}.${uniqueName('counter.f')}`;
    const head = await t.jsm.streams.getMessage(t.settings.stream, { seq: first.seq });
    if (!head) throw new Error('no head');
    const hashOfHead = linkOf(rawOf(head)).hash;
    // Correctly linked, signed by a key that is not the writer's.
    const forged = lookalike(subject.slice(t.settings.subjectPrefix.length + 1), 7);
    const { headers } = sealHeaders(newIdentity(), hashOfHead, subject, first.seq + 1, forged);
    const forgedSeq = (await js.publish(subject, forged, { headers })).seq;
    const held = await collect(t.another().read()).catch((error: MeshError) => error);
    expect(held).toMatchObject({ code: 'corrupt_event', details: { seq: forgedSeq, field: 'commit' } });
    expect((held as MeshError).message).toContain('does not verify under the log');

    // Signed by the writer's key, but linked to a commit that is not the one before it.
    const misplaced = lookalike(subject.slice(t.settings.subjectPrefix.length + 1), 8);
    const sealed = sealHeaders(t.key, GENESIS_PREV, subject, forgedSeq + 1, misplaced);
    const misplacedSeq = (await js.publish(subject, misplaced, { headers: sealed.headers })).seq;
    const reader = t.another();
    await t.log.append(voidAggregate(forgedSeq), [{ type: LogVoided.type, data: { seq: forgedSeq, aggregate: 'x.y', reason: 'forged', problem: 'signature' } }], 0, meta('void-1', 'operator:ada'));
    const linked = await collect(reader.read({ onPassed: () => undefined })).catch((error: MeshError) => error);
    expect(linked).toMatchObject({ details: { seq: misplacedSeq } });
    expect((linked as MeshError).message).toContain('is not the hash of the commit before it');
    // One aggregate's reader sees no link: the signature is the writer's, so it reads.
    expect((await collect(reader.read({ aggregate: subject.slice(t.settings.subjectPrefix.length + 1), onPassed: () => undefined }))).map((e) => e.data)).toEqual([{ n: 8 }]);
  });
});

const waitUntil = async (condition: () => boolean, timeoutMs = 20_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
};
