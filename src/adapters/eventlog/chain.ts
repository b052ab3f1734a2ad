import * as nodeCrypto from 'node:crypto';
import { headers as natsHeaders, type MsgHdrs } from '@nats-io/nats-core';
import { signBytes, verifyBytes, type Identity } from '../identity.js';
import { toBase64 } from '../key-files.js';

// The log proves who wrote it. Every commit carries, as NATS headers beside its unchanged body,
// the hash of the commit before it (Mesh-Prev) and the writer's ed25519 signature over its own
// hash (Mesh-Sig); the first commit also names the writer's public key (Mesh-Key), which is the
// key every later commit must verify under. A commit's hash is computed from that message alone:
//
//   h_n = sha256("mesh.log.chain/1" ‖ u32 len ‖ prev_n ‖ u32 len ‖ subject ‖ u64 seq ‖ u64 since_n ‖ sha256(payload))
//
// so a reader of one aggregate (who never sees the commit before) can still check a signature,
// and a reader of the whole log also checks the link: prev_n == h_{n-1}. The sequence is inside
// the hash, so a commit cannot be replayed elsewhere in the log; the subject is, so it cannot be
// moved to another aggregate.
//
// `since_n` (Mesh-Since) is what the writer's signature also answers for: every commit from
// since_n to n − 1 was written by this writer or checked by it (signature and link) before it
// signed n. The writer only ever says so of commits it knows; a commit it could not check ends the
// stretch. A reader of the whole log catching up can then check one signature for a stretch of
// linked commits instead of one per commit: the hash of n binds every commit back to since_n
// through the links, and the signature says each of them is the writer's. Absent, since_n is n:
// the signature answers for its own commit alone.
export const PREV_HEADER = 'Mesh-Prev';
export const SIG_HEADER = 'Mesh-Sig';
export const KEY_HEADER = 'Mesh-Key';
export const SINCE_HEADER = 'Mesh-Since';

/** What the first commit links to. */
export const GENESIS_PREV: Uint8Array = new Uint8Array(32);

const DOMAIN = Buffer.from('mesh.log.chain/1');

// Every reader hashes every commit twice: one-shot hashing over one buffer (node ≥ 20.12), not a
// stream of small updates, which costs about as much as decoding the commit.
const oneShot = (nodeCrypto as { hash?: (algorithm: string, data: Uint8Array, encoding: 'buffer') => Buffer }).hash;
const sha256: (bytes: Uint8Array) => Buffer = oneShot ? (bytes) => oneShot('sha256', bytes, 'buffer') : (bytes) => nodeCrypto.createHash('sha256').update(bytes).digest();

/** h_seq. `since` defaults to `seq`: the commit answers for itself alone. */
export const commitHash = (prev: Uint8Array, subject: string, seq: number, payload: Uint8Array, since = seq): Uint8Array => {
  const body = sha256(payload);
  const subjectLength = Buffer.byteLength(subject);
  const frame = Buffer.allocUnsafe(DOMAIN.length + 4 + prev.length + 4 + subjectLength + 16 + body.length);
  let at = DOMAIN.copy(frame, 0);
  at = frame.writeUInt32BE(prev.length, at);
  frame.set(prev, at);
  at += prev.length;
  at = frame.writeUInt32BE(subjectLength, at);
  at += frame.write(subject, at);
  at = frame.writeBigUInt64BE(BigInt(seq), at);
  at = frame.writeBigUInt64BE(BigInt(since), at);
  frame.set(body, at);
  return sha256(frame);
};

/** One stored message as the chain sees it. */
export interface ChainLink {
  seq: number;
  subject: string;
  /** Mesh-Prev, decoded; empty when the message has none */
  prev: Uint8Array;
  /** Mesh-Sig, base64; undefined when the message has none */
  sig: string | undefined;
  /** Mesh-Key, base64: only the first commit carries it */
  key: string | undefined;
  /** Mesh-Since: the first commit this one's signature answers for (its own seq when absent or not a sequence before it) */
  since: number;
  /** h_seq, from this message's own bytes */
  hash: Uint8Array;
}

const headerOf = (hdrs: MsgHdrs | undefined, name: string): string | undefined => {
  const value = hdrs?.get(name);
  return value ? value : undefined;
};

const sinceOf = (text: string | undefined, seq: number): number => {
  const since = text !== undefined && /^\d{1,15}$/.test(text) ? Number(text) : seq;
  return since >= 1 && since <= seq ? since : seq;
};

export const linkOf = (message: { seq: number; subject: string; data: Uint8Array; headers: MsgHdrs | undefined }): ChainLink => {
  const prevText = headerOf(message.headers, PREV_HEADER);
  const prev = prevText === undefined ? new Uint8Array(0) : Buffer.from(prevText, 'base64');
  const since = sinceOf(headerOf(message.headers, SINCE_HEADER), message.seq);
  return {
    seq: message.seq,
    subject: message.subject,
    prev,
    sig: headerOf(message.headers, SIG_HEADER),
    key: headerOf(message.headers, KEY_HEADER),
    since,
    hash: commitHash(prev, message.subject, message.seq, message.data, since),
  };
};

// A commit's bytes never change once stored (the log denies delete and purge), and every reader of
// a process checks the same commits at about the same time (the controller's fold, the builds'
// fold, the projector): a signature checked once is remembered by sequence, hash and signature,
// so a process pays for each commit's check once. A memo of a pure function, bounded.
const REMEMBERED = 65_536;
const checked: ({ seq: number; hash: Uint8Array; sig: string; key: string } | undefined)[] = new Array(REMEMBERED);

/**
 * The headers a commit is published with: its link, its signature, what else the signature answers
 * for (`since`, when it is before `seq`), and on the first commit the writer's key.
 */
export const sealHeaders = (identity: Identity, prev: Uint8Array, subject: string, seq: number, payload: Uint8Array, since = seq): { hash: Uint8Array; headers: MsgHdrs } => {
  const hash = commitHash(prev, subject, seq, payload, since);
  const headers = natsHeaders();
  headers.set(PREV_HEADER, toBase64(prev));
  const sig = signBytes(identity, hash);
  headers.set(SIG_HEADER, sig);
  // This process made the signature: its readers need not check it again when the commit comes
  // back (a commit that lands in its place instead has another hash, and is checked).
  checked[seq % REMEMBERED] = { seq, hash, sig, key: identity.publicKey };
  if (since < seq) headers.set(SINCE_HEADER, String(since));
  if (seq === 1) headers.set(KEY_HEADER, identity.publicKey);
  return { hash, headers };
};

export const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && Buffer.compare(a, b) === 0;

const signatureHolds = (key: string, link: ChainLink & { sig: string }): boolean => {
  const slot = link.seq % REMEMBERED;
  const seen = checked[slot];
  if (seen && seen.seq === link.seq && seen.sig === link.sig && seen.key === key && sameBytes(seen.hash, link.hash)) return true;
  const holds = verifyBytes(key, link.hash, link.sig);
  if (holds) checked[slot] = { seq: link.seq, hash: link.hash, sig: link.sig, key };
  return holds;
};

/** Why `link` does not link to the commit before it. */
export const linkProblem = (link: ChainLink): string =>
  link.prev.length === 0
    ? `it carries no link (${PREV_HEADER}) to the commit before it`
    : `its link (${PREV_HEADER}) is not the hash of the commit before it: a commit was inserted, altered or removed there`;

/** Why `link`'s signature does not hold under `key`, or undefined when it does. */
export const signatureProblem = (link: ChainLink, key: string | undefined): string | undefined => {
  if (key === undefined) return `the log's first commit names no writer key (${KEY_HEADER}), so no commit of it can be verified`;
  if (link.sig === undefined) return `it carries no writer signature (${SIG_HEADER}): the mesh's writer did not append it`;
  if (!signatureHolds(key, link as ChainLink & { sig: string })) return `its signature (${SIG_HEADER}) does not verify under the log's writer key: it was altered, or written with another key`;
  return undefined;
};

/**
 * Why `link` does not verify, or undefined when it does: signed under `key` and, when the hash of
 * the commit before it is given (a reader of the whole log), linked to it.
 */
export const chainProblem = (link: ChainLink, key: string | undefined, before?: Uint8Array): string | undefined => {
  const problems: string[] = [];
  if (before !== undefined && !sameBytes(link.prev, before)) problems.push(linkProblem(link));
  const signature = signatureProblem(link, key);
  if (signature) problems.push(signature);
  return problems.length > 0 ? problems.join('; ') : undefined;
};
