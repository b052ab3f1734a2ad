import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { EventLog } from '../adapters/eventlog/event-log.js';
import { signBytes, verifyBytes, type Identity } from '../adapters/identity.js';
import type { StoredSnapshot } from '../adapters/nats/fold-snapshot-store.js';
import { decodeMeshState, encodeMeshState } from '../domain/mesh/snapshot.js';
import type { MeshState } from '../domain/mesh/state.js';
import type { MeshEvent } from '../domain/registry.js';

// A process starts its fold from the newest snapshot of it instead of from seq 1, and keeps one as
// the log grows (docs/decisions.md, "Snapshots of the fold"). A snapshot says the sequence it was
// taken at, the hash of the log's commit there (which binds every commit before it), the code
// version of the fold that wrote it and how long encoding took, and is signed by the log's writer
// over all of that and the digest of its bytes. It is taken only when every check holds:
//
//   - it is signed by the key the log's first commit names (nobody else can plant a fold);
//   - it was written by this very fold code (a fold of other code may have another shape);
//   - its bytes are the ones signed, and they decode to a mesh state at its sequence;
//   - the log still holds that commit at that sequence (the log was not made again under its name).
//
// Otherwise it is ignored, saying which and why, and the fold starts from seq 1.

/** Where a fold started from: a snapshot at `seq`, or seq 0 (and why no snapshot was taken). */
export interface FoldStart {
  seq: number;
  snapshot: boolean;
  /** why no snapshot was taken, when none was */
  reason?: string;
}

/** Where snapshots are kept: the object store (fold-snapshot-store.ts), or anything that keeps one per fold. */
export interface SnapshotKeeping {
  readonly where: string;
  read(): Promise<StoredSnapshot | undefined>;
  write(meta: Record<string, string>, bytes: Uint8Array, description: string): Promise<void>;
}

export interface FoldSnapshotsOptions {
  store: SnapshotKeeping;
  /** the log the fold follows: its writer key, and its commit at a snapshot's sequence */
  log: Pick<EventLog<MeshEvent>, 'writerKey' | 'commitDigest'>;
  /** the log's stream: signed with the rest, so a snapshot of one log is never taken for another's */
  stream: string;
  /** the fold code this process runs (foldCodeVersion()) */
  codeVersion: string;
  /** the log's writer key, to sign with: a process without it reads snapshots and writes none */
  signer?: Pick<Identity, 'secretKey'>;
  logger: Logger;
}

/** What a snapshot says of itself, signed. */
interface Sealed {
  stream: string;
  seq: number;
  commit: string;
  codeVersion: string;
  stateSha256: string;
  encodeMs: number;
  writtenAt: string;
}

const FIELDS = { stream: 'stream', seq: 'seq', commit: 'commit', codeVersion: 'code-version', stateSha256: 'state-sha256', encodeMs: 'encode-ms', writtenAt: 'written-at' } as const;
const SIGNATURE = 'signature';

const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');
const signedBytes = (sealed: Sealed): Uint8Array =>
  Buffer.from(`mesh.fold-snapshot/1\n${JSON.stringify([sealed.stream, sealed.seq, sealed.commit, sealed.codeVersion, sealed.stateSha256, sealed.encodeMs, sealed.writtenAt])}`);

const metaOf = (sealed: Sealed, signature: string): Record<string, string> => ({
  [FIELDS.stream]: sealed.stream,
  [FIELDS.seq]: String(sealed.seq),
  [FIELDS.commit]: sealed.commit,
  [FIELDS.codeVersion]: sealed.codeVersion,
  [FIELDS.stateSha256]: sealed.stateSha256,
  [FIELDS.encodeMs]: String(sealed.encodeMs),
  [FIELDS.writtenAt]: sealed.writtenAt,
  [SIGNATURE]: signature,
});

/** What the metadata says, or which field is missing. */
const sealedOf = (meta: Readonly<Record<string, string>>): Sealed | string => {
  const missing = [...Object.values(FIELDS), SIGNATURE].filter((field) => typeof meta[field] !== 'string');
  if (missing.length > 0) return `its metadata has no ${missing.join(', ')}`;
  const seq = Number(meta[FIELDS.seq]);
  const encodeMs = Number(meta[FIELDS.encodeMs]);
  if (!Number.isSafeInteger(seq) || seq < 1) return `its metadata names no log sequence (seq ${meta[FIELDS.seq]})`;
  return {
    stream: meta[FIELDS.stream] as string,
    seq,
    commit: meta[FIELDS.commit] as string,
    codeVersion: meta[FIELDS.codeVersion] as string,
    stateSha256: meta[FIELDS.stateSha256] as string,
    encodeMs,
    writtenAt: meta[FIELDS.writtenAt] as string,
  };
};

const short = (digest: string): string => digest.slice(0, 12);

export class FoldSnapshots {
  constructor(private readonly options: FoldSnapshotsOptions) {}

  get where(): string {
    return this.options.store.where;
  }

  /**
   * The newest snapshot, when it passes every check: the state to fold on from, at its sequence.
   * Otherwise why none is taken (no snapshot at all is a reason too). Never throws: a store that
   * cannot be read is a reason to fold from seq 1.
   */
  async load(): Promise<{ state: MeshState; start: FoldStart } | { start: FoldStart; ignored: boolean }> {
    const ignored = (reason: string) => ({ start: { seq: 0, snapshot: false, reason }, ignored: true });
    let stored: StoredSnapshot | undefined;
    try {
      stored = await this.options.store.read();
    } catch (error) {
      return ignored(`the snapshot at ${this.where} could not be read: ${(error as Error).message}`);
    }
    if (!stored) return { start: { seq: 0, snapshot: false, reason: `no snapshot is stored at ${this.where}` }, ignored: false };
    const sealed = sealedOf(stored.meta);
    if (typeof sealed === 'string') return ignored(`the snapshot at ${this.where} is ignored: ${sealed}`);
    const which = `the snapshot at ${this.where} (seq ${sealed.seq}, written ${sealed.writtenAt})`;
    const { stream, codeVersion, log } = this.options;
    if (sealed.stream !== stream) return ignored(`${which} is ignored: it is of stream ${sealed.stream}, not ${stream}`);
    if (sealed.codeVersion !== codeVersion) {
      return ignored(`${which} is ignored: another code version of the fold wrote it (${short(sealed.codeVersion)}; this process runs ${short(codeVersion)})`);
    }
    try {
      const key = await log.writerKey();
      if (!key) return ignored(`${which} is ignored: the log names no writer key to verify its signature under`);
      if (!verifyBytes(key, signedBytes(sealed), stored.meta[SIGNATURE] as string)) {
        return ignored(`${which} is ignored: its signature does not verify under the log's writer key (written or altered by another key)`);
      }
      const bytes = await stored.bytes();
      if (!bytes) return ignored(`${which} is ignored: its bytes are gone`);
      if (sha256(bytes) !== sealed.stateSha256) return ignored(`${which} is ignored: its bytes are not the ones signed (sha256 ${short(sha256(bytes))}, signed ${short(sealed.stateSha256)})`);
      let state: MeshState;
      try {
        state = decodeMeshState(bytes);
      } catch (error) {
        return ignored(`${which} is ignored: it does not decode: ${(error as Error).message}`);
      }
      if (state.seq !== sealed.seq) return ignored(`${which} is ignored: it does not decode to seq ${sealed.seq} but ${state.seq}`);
      const commit = await log.commitDigest(sealed.seq);
      if (commit === undefined) return ignored(`${which} is ignored: the log holds no commit at seq ${sealed.seq}`);
      if (commit !== sealed.commit) return ignored(`${which} is ignored: the log differs at seq ${sealed.seq} (its commit is ${short(commit)}, the snapshot was taken at ${short(sealed.commit)})`);
      return { state, start: { seq: sealed.seq, snapshot: true } };
    } catch (error) {
      return ignored(`${which} could not be checked: ${(error as Error).message}`);
    }
  }

  /**
   * Encodes the state as it is now, before it returns (the fold may go on while the rest is done),
   * then signs it with the commit at its sequence and stores it. Resolves with what was written, or
   * undefined when this process holds no key to sign with.
   */
  save(state: MeshState): Promise<{ seq: number; bytes: number; encodeMs: number; storeMs: number } | undefined> {
    const signer = this.options.signer;
    if (!signer) return Promise.resolve(undefined);
    const started = performance.now();
    const bytes = encodeMeshState(state);
    const encodeMs = Math.round(performance.now() - started);
    const seq = state.seq;
    return this.store(signer, seq, bytes, encodeMs);
  }

  private async store(signer: Pick<Identity, 'secretKey'>, seq: number, bytes: Uint8Array, encodeMs: number): Promise<{ seq: number; bytes: number; encodeMs: number; storeMs: number }> {
    const started = performance.now();
    const commit = await this.options.log.commitDigest(seq);
    if (commit === undefined) throw new Error(`the log holds no commit at seq ${seq}, the fold's sequence`);
    const sealed: Sealed = { stream: this.options.stream, seq, commit, codeVersion: this.options.codeVersion, stateSha256: sha256(bytes), encodeMs, writtenAt: new Date().toISOString() };
    await this.options.store.write(metaOf(sealed, signBytes(signer, signedBytes(sealed))), bytes, `the fold of ${this.options.stream} at seq ${seq}`);
    return { seq, bytes: bytes.length, encodeMs, storeMs: Math.round(performance.now() - started) };
  }
}
