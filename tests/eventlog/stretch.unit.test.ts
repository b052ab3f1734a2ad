import { describe, expect, it } from '@jest/globals';
import { headers as natsHeaders } from '@nats-io/nats-core';
import { GENESIS_PREV, PREV_HEADER, sealHeaders, SIG_HEADER, SINCE_HEADER } from '../../src/adapters/eventlog/chain.js';
import { StretchCheck, type RawMessage } from '../../src/adapters/eventlog/chain-reader.js';
import { encodeCommit } from '../../src/adapters/eventlog/codec.js';
import { newIdentity, type Identity } from '../../src/adapters/identity.js';
import type { Commit } from '../../src/domain/events/envelope.js';
import { testRegistry } from '../helpers/test-events.js';

// How a reader of the whole log decides a stretch of commits: each link as it comes, then from the
// last back, one signature that holds answering for every linked commit since its Mesh-Since —
// the writer's word that it wrote or checked them. Anything else is checked one by one.

const PREFIX = 'x.log';
const body = (seq: number): Uint8Array =>
  encodeCommit({
    firstVersion: seq,
    events: [{ id: `e${seq}`, type: 'test.counted', schemaVersion: 1, aggregate: 'counter.one', time: '2026-01-01T00:00:00.000Z', actor: 'a', commandId: `c${seq}`, causationId: 'c', correlationId: 'c', data: { n: seq } }],
  } as Commit);

/** Commits 1..count on one subject, as one writer seals them, each answering for everything since `since(seq)`. */
const sealed = (key: Identity, count: number, since: (seq: number) => number): RawMessage[] => {
  const messages: RawMessage[] = [];
  let prev = GENESIS_PREV;
  for (let seq = 1; seq <= count; seq++) {
    const data = body(seq);
    const { hash, headers } = sealHeaders(key, prev, `${PREFIX}.counter.one`, seq, data, since(seq));
    messages.push({ seq, subject: `${PREFIX}.counter.one`, data, headers });
    prev = hash;
  }
  return messages;
};

/** The same message with its signature replaced by nonsense: it no longer verifies by itself. */
const unsigned = (message: RawMessage): RawMessage => {
  const headers = natsHeaders();
  headers.set(PREV_HEADER, message.headers?.get(PREV_HEADER) ?? '');
  const since = message.headers?.get(SINCE_HEADER);
  if (since) headers.set(SINCE_HEADER, since);
  headers.set(SIG_HEADER, Buffer.alloc(64).toString('base64'));
  return { ...message, headers };
};

const decide = (messages: RawMessage[], key: string, decideEach = false) => {
  const stretch = new StretchCheck({ subjectPrefix: PREFIX, registry: testRegistry() }, GENESIS_PREV);
  return messages.flatMap((message, i) => stretch.push(message, key, decideEach || i === messages.length - 1)).map((c) => [c.seq, c.problem ?? 'ok']);
};

describe('a stretch of the log, decided by one signature', () => {
  const key = newIdentity();

  it('takes a stretch the last signature answers for, and checks the rest one by one', () => {
    const messages = sealed(key, 5, () => 1);
    // Commit 3 no longer verifies by itself; commit 5 answers for it (the writer wrote or checked it).
    messages[2] = unsigned(messages[2] as RawMessage);
    expect(decide(messages, key.publicKey)).toEqual([1, 2, 3, 4, 5].map((seq) => [seq, 'ok']));
    // Decided one at a time (a reader at the head), commit 3 stands alone, and does not verify.
    expect(decide(messages, key.publicKey, true).find(([seq]) => seq === 3)?.[1]).toContain('does not verify');
  });

  it('answers only for what the signature says: since a later commit, the ones before are checked alone', () => {
    const messages = sealed(key, 5, (seq) => (seq >= 4 ? 4 : seq));
    messages[1] = unsigned(messages[1] as RawMessage);
    const decided = decide(messages, key.publicKey);
    expect(decided.filter(([, problem]) => problem !== 'ok').map(([seq]) => seq)).toEqual([2]);
  });

  it('answers for nothing across a broken link, and never for a signature that does not hold', () => {
    // Commits 1 to 3 answer for themselves alone.
    const messages = sealed(key, 5, (seq) => (seq <= 3 ? seq : 1));
    messages[1] = unsigned(messages[1] as RawMessage);
    // Commit 4 linked to something else, and commit 5 signed after it claiming the whole stretch:
    // what is before the broken link is not bound to commit 5's hash, so its signature cannot answer for it.
    const four = sealHeaders(key, GENESIS_PREV, `${PREFIX}.counter.one`, 4, body(4), 4);
    messages[3] = { ...(messages[3] as RawMessage), headers: four.headers };
    messages[4] = { ...(messages[4] as RawMessage), headers: sealHeaders(key, four.hash, `${PREFIX}.counter.one`, 5, body(5), 1).headers };
    const decided = decide(messages, key.publicKey);
    expect(decided.filter(([, problem]) => problem !== 'ok').map(([seq, problem]) => [seq, String(problem).includes('does not verify') ? 'signature' : 'link'])).toEqual([
      [2, 'signature'],
      [4, 'link'],
    ]);

    // A stretch whose last commit is signed with another key answers for nothing.
    const stranger = sealed(newIdentity(), 3, () => 1);
    expect(decide(stranger, key.publicKey).map(([, problem]) => String(problem).includes('does not verify'))).toEqual([true, true, true]);
  });
});
