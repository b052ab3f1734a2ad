import { createHash } from 'node:crypto';
import { headers as natsHeaders, type MsgHdrs } from '@nats-io/nats-core';
import { signBytes, verifyBytes, type Identity } from '../identity.js';
import { fromBase64, toBase64 } from '../key-files.js';

// The log proves who wrote it. Every commit carries, as NATS headers beside its unchanged body,
// the hash of the commit before it (Mesh-Prev) and the writer's ed25519 signature over its own
// hash (Mesh-Sig); the first commit also names the writer's public key (Mesh-Key), which is the
// key every later commit must verify under. A commit's hash is computed from that message alone:
//
//   h_n = sha256("mesh.log.chain/1" ‖ u32 len ‖ prev_n ‖ u32 len ‖ subject ‖ u64 seq ‖ sha256(payload))
//
// so a reader of one aggregate (who never sees the commit before) can still check a signature,
// and a reader of the whole log also checks the link: prev_n == h_{n-1}. The sequence is inside
// the hash, so a commit cannot be replayed elsewhere in the log; the subject is, so it cannot be
// moved to another aggregate.

export const PREV_HEADER = 'Mesh-Prev';
export const SIG_HEADER = 'Mesh-Sig';
export const KEY_HEADER = 'Mesh-Key';

/** What the first commit links to. */
export const GENESIS_PREV: Uint8Array = new Uint8Array(32);

const DOMAIN = Buffer.from('mesh.log.chain/1');
const encoder = new TextEncoder();

const u32 = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};

export const commitHash = (prev: Uint8Array, subject: string, seq: number, payload: Uint8Array): Uint8Array => {
  const seqBytes = Buffer.alloc(8);
  seqBytes.writeBigUInt64BE(BigInt(seq));
  const subjectBytes = encoder.encode(subject);
  const body = createHash('sha256').update(payload).digest();
  return createHash('sha256').update(DOMAIN).update(u32(prev.length)).update(prev).update(u32(subjectBytes.length)).update(subjectBytes).update(seqBytes).update(body).digest();
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
  /** h_seq, from this message's own bytes */
  hash: Uint8Array;
}

const headerOf = (hdrs: MsgHdrs | undefined, name: string): string | undefined => {
  const value = hdrs?.get(name);
  return value ? value : undefined;
};

export const linkOf = (message: { seq: number; subject: string; data: Uint8Array; headers: MsgHdrs | undefined }): ChainLink => {
  const prevText = headerOf(message.headers, PREV_HEADER);
  const prev = prevText === undefined ? new Uint8Array(0) : fromBase64(prevText);
  return {
    seq: message.seq,
    subject: message.subject,
    prev,
    sig: headerOf(message.headers, SIG_HEADER),
    key: headerOf(message.headers, KEY_HEADER),
    hash: commitHash(prev, message.subject, message.seq, message.data),
  };
};

/** The headers a commit is published with: its link, its signature, and on the first commit the writer's key. */
export const sealHeaders = (identity: Identity, prev: Uint8Array, subject: string, seq: number, payload: Uint8Array): { hash: Uint8Array; headers: MsgHdrs } => {
  const hash = commitHash(prev, subject, seq, payload);
  const headers = natsHeaders();
  headers.set(PREV_HEADER, toBase64(prev));
  headers.set(SIG_HEADER, signBytes(identity, hash));
  if (seq === 1) headers.set(KEY_HEADER, identity.publicKey);
  return { hash, headers };
};

export const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && Buffer.compare(a, b) === 0;

// A commit's bytes never change once stored (the log denies delete and purge), and every reader of
// a process checks the same commits at about the same time (the controller's fold, the builds'
// fold, the projector): a signature checked once is remembered by sequence, hash and signature,
// so a process pays for each commit's check once. A memo of a pure function, bounded.
const REMEMBERED = 65_536;
const checked: ({ seq: number; hash: Uint8Array; sig: string; key: string } | undefined)[] = new Array(REMEMBERED);

const signatureHolds = (key: string, link: ChainLink & { sig: string }): boolean => {
  const slot = link.seq % REMEMBERED;
  const seen = checked[slot];
  if (seen && seen.seq === link.seq && seen.sig === link.sig && seen.key === key && sameBytes(seen.hash, link.hash)) return true;
  const holds = verifyBytes(key, link.hash, link.sig);
  if (holds) checked[slot] = { seq: link.seq, hash: link.hash, sig: link.sig, key };
  return holds;
};

/**
 * Why `link` does not verify, or undefined when it does: signed under `key` and, when the hash of
 * the commit before it is given (a reader of the whole log), linked to it.
 */
export const chainProblem = (link: ChainLink, key: string | undefined, before?: Uint8Array): string | undefined => {
  const problems: string[] = [];
  if (before !== undefined && !sameBytes(link.prev, before)) {
    problems.push(`its link (${PREV_HEADER}) is not the hash of the commit before it: a commit was inserted, altered or removed there`);
  }
  if (key === undefined) problems.push(`the log's first commit names no writer key (${KEY_HEADER}), so no commit of it can be verified`);
  else if (link.sig === undefined) problems.push(`it carries no writer signature (${SIG_HEADER}): the mesh's writer did not append it`);
  else if (!signatureHolds(key, link as ChainLink & { sig: string })) problems.push(`its signature (${SIG_HEADER}) does not verify under the log's writer key: it was altered, or written with another key`);
  return problems.length > 0 ? problems.join('; ') : undefined;
};
