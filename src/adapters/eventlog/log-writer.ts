import { isTransientJetStreamError } from '../nats/transient.js';
import { JetStreamApiError, jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager, type PubAck } from '@nats-io/jetstream';
import { errors as natsErrors, type MsgHdrs, type NatsConnection } from '@nats-io/nats-core';
import type { Identity } from '../identity.js';
import { RefusedError, UnavailableError } from '../../errors.js';
import { chainProblem, GENESIS_PREV, linkOf, sealHeaders } from './chain.js';
import { rawOf } from './chain-reader.js';

// The one writer of a log in a process. Every append of the process goes through it, one at a
// time: it keeps the log's head (sequence and hash), signs the next commit as head + 1 linked to
// the head's hash, and publishes it on the condition that the whole log still ends at the head
// (Nats-Expected-Last-Sequence) — so the sequence it signed is the one the commit gets. When the
// log moved under it (another process appended: JetStream 10071), it reads the head again — the
// hash of whatever is there, computed from that message's own bytes, so the chain continues
// through a commit it did not write — and tries again, unless the aggregate's own expectation
// failed or a mesh command was decided against the log as it was (expectedLogSeq): those are
// conflicts for the caller, as before.
//
// Each signature also answers for the stretch before it (Mesh-Since, chain.ts): every commit since
// the writer read the head, which it wrote itself or checked — a commit another process appended
// meanwhile is checked (signature and link) before the writer signs after it, and one that does
// not verify ends the stretch there.

// JetStream: "wrong last sequence" (10071) and, on newer servers, the batch variant (10164).
const WRONG_LAST_SEQUENCE = new Set([10071, 10164]);
/** JetStream: "wrong last msg ID" — the log does not end at the commit a pipelined write follows. */
const WRONG_LAST_MSG_ID = 10070;

/** How many times a write follows a log that keeps moving before it gives the conflict back. */
const MAX_ATTEMPTS = 50;

/** More commits than this appended by others at once are not checked: the stretch starts again after them. */
const CHECKED_AT_MOST = 1_000;

export interface PublishOptions {
  msgID: string;
  expect: { lastSubjectSequence?: number; lastSequence: number; lastMsgID?: string };
  timeout: number;
  headers: MsgHdrs;
}

export type PublishFn = (js: JetStreamClient, subject: string, payload: Uint8Array, options: PublishOptions) => Promise<PubAck>;

/** The server did not answer (or cannot be reached): what every write queued behind would meet too. */
const unanswered = (error: unknown): boolean =>
  error instanceof natsErrors.TimeoutError ||
  error instanceof natsErrors.ConnectionError ||
  error instanceof natsErrors.ClosedConnectionError ||
  error instanceof natsErrors.NoRespondersError ||
  (error instanceof natsErrors.RequestError && error.isNoResponders());

const realPublish: PublishFn = (js, subject, payload, options) => js.publish(subject, payload, options);

export interface LogWriterOptions {
  stream: string;
  /** the key every commit is signed with; the log's first commit names its public half */
  key: Identity;
  /** where the key was found, for messages: a file, or "the test mesh" */
  keySource?: string;
  /** how long a publish waits for the server's acknowledgement */
  timeoutMs?: number;
  /** the transport behind publish; a seam for tests that must lose an acknowledgement */
  publish?: PublishFn;
  /** told of each commit this writer stored (not a duplicate): what counts the appends */
  onStored?: (seq: number) => void;
}

export interface WriteRequest {
  subject: string;
  payload: Uint8Array;
  /** Nats-Msg-Id: the server's duplicate window answers a retry with the original */
  msgID: string;
  /**
   * the aggregate's last stream sequence as the caller expects it (0: a new aggregate). The log
   * always gives it; only a tool that stores commits exactly as they once were (a frozen log)
   * leaves it out.
   */
  lastSubjectSequence?: number;
  /** a mesh command decided against the log at this sequence: it must land right after it */
  expectedLogSeq?: number;
}

export type WriteOutcome =
  | { kind: 'stored'; seq: number }
  /** the server had this message id already: nothing was stored */
  | { kind: 'duplicate'; seq: number }
  /** an expectation failed: the aggregate's, or (logMoved) the log's for a mesh command */
  | { kind: 'conflict'; logMoved: boolean; cause?: unknown };

/**
 * A write issued behind others still in flight: `issued` says whether it was published at all
 * (false: the log does not end where the command was decided — nothing was sent), `outcome`
 * resolves with the server's answer.
 */
export interface IssuedWrite {
  issued: Promise<{ seq: number } | undefined>;
  outcome: Promise<WriteOutcome>;
}

export class LogWriter {
  private readonly js: JetStreamClient;
  private readonly jsm: Promise<JetStreamManager>;
  private readonly publish: PublishFn;
  /**
   * The log's end as this writer knows it: after every write it issued, acknowledged or still in
   * flight. `msgID` is the message id there, when this writer issued it: the next pipelined write
   * expects it too (Nats-Expected-Last-Msg-Id), so it cannot land after a foreign commit that took
   * the sequence a failed write was meant to have.
   */
  private head: { seq: number; hash: Uint8Array; msgID?: string } | undefined;
  /** the first commit of the stretch this writer answers for: every one from it to the head it wrote or checked */
  private since = 1;
  private rootVerified = false;
  private tail: Promise<unknown> = Promise.resolve();
  /** Writes are queued in epochs; a write that fails for want of the server ends its epoch. */
  private epoch = 0;
  private failed: { epoch: number; error: unknown } | undefined;

  constructor(
    nc: NatsConnection,
    readonly options: LogWriterOptions,
  ) {
    this.js = jetstream(nc);
    this.jsm = jetstreamManager(nc, { checkAPI: false });
    this.publish = options.publish ?? realPublish;
  }

  get stream(): string {
    return this.options.stream;
  }

  get publicKey(): string {
    return this.options.key.publicKey;
  }

  /**
   * Appends one commit after everything before it in this process. When a write fails with its
   * outcome unknown (the server did not answer), the writes queued behind it fail with it rather
   * than each waiting out the same silence; writes queued after that try again.
   */
  write(request: WriteRequest): Promise<WriteOutcome> {
    const epoch = this.epoch;
    const run = this.tail.then(async () => {
      if (this.failed?.epoch === epoch) {
        throw new UnavailableError(`not appended to ${request.subject}: the write before it in this process could not reach the log (${(this.failed.error as Error)?.message ?? String(this.failed.error)}); send it again`, {
          subject: request.subject,
        }, { cause: this.failed.error });
      }
      try {
        return await this.writeNow(request);
      } catch (error) {
        if (unanswered(error)) {
          this.failed = { epoch, error };
          if (this.epoch === epoch) this.epoch++;
        }
        throw error;
      }
    });
    this.tail = run.catch(() => undefined);
    return run;
  }

  /**
   * Issues a write without waiting for the writes before it to be acknowledged: it is signed as
   * the commit after the last one issued and published on the condition that the log ends exactly
   * there (its sequence and that commit's message id). Writes are issued in call order. When one
   * fails, every write issued after it fails too (their condition names a commit that is not
   * there), and the writer reads the head again before issuing the next. For a mesh command
   * decided at `expectedLogSeq`: that is the aggregate's expectation too, so none is sent.
   */
  issue(request: WriteRequest & { expectedLogSeq: number }): IssuedWrite {
    let settle!: (outcome: Promise<WriteOutcome>) => void;
    const outcome = new Promise<WriteOutcome>((resolve) => (settle = resolve));
    const issued = this.tail.then(async () => {
      let head = this.head ?? (await this.freshHead());
      // The command was decided against more of the log than this writer has seen (another process appended): look again.
      if (head.seq < request.expectedLogSeq) head = await this.moveTo(head);
      if (head.seq !== request.expectedLogSeq) {
        settle(Promise.resolve({ kind: 'conflict', logMoved: true }));
        return undefined;
      }
      const seq = head.seq + 1;
      if (seq > 1) await this.verifyRoot();
      const { hash, headers } = sealHeaders(this.options.key, head.hash, request.subject, seq, request.payload, Math.min(this.since, seq));
      // Asked again when the answer is lost (a server reloading its configuration drops it for a
      // moment): both expectations and the message id make a second copy impossible.
      const published = this.publishOnce(request.subject, request.payload, {
        msgID: request.msgID,
        expect: { lastSequence: head.seq, ...(head.msgID !== undefined ? { lastMsgID: head.msgID } : {}) },
        timeout: this.options.timeoutMs ?? 5_000,
        headers,
      });
      this.head = { seq, hash, msgID: request.msgID };
      settle(
        published.then(
          (ack): WriteOutcome => {
            // A duplicate at the very sequence this commit was issued at is this commit, stored by a
            // first try whose answer was lost.
            if (ack.duplicate && ack.seq === seq) return this.stored(seq);
            if (ack.duplicate || ack.seq !== seq) {
              // Nothing was stored where this writer said it would be: the head is read again.
              this.forgetHead();
              return ack.duplicate ? { kind: 'duplicate', seq: ack.seq } : { kind: 'conflict', logMoved: true };
            }
            return this.stored(seq);
          },
          (error: unknown): WriteOutcome => {
            this.forgetHead();
            if (error instanceof JetStreamApiError && WRONG_LAST_SEQUENCE.has(error.code)) return { kind: 'conflict', logMoved: true, cause: error };
            if (error instanceof JetStreamApiError && error.code === WRONG_LAST_MSG_ID) return { kind: 'conflict', logMoved: true, cause: error };
            throw error;
          },
        ),
      );
      return { seq };
    });
    this.tail = issued.catch(() => undefined);
    issued.catch((error: unknown) => settle(Promise.reject(error)));
    return { issued, outcome };
  }

  private stored(seq: number): WriteOutcome {
    this.options.onStored?.(seq);
    return { kind: 'stored', seq };
  }

  /** The head is not known any more: the next write reads it from the server. */
  private forgetHead(): void {
    this.head = undefined;
  }

  private async writeNow(request: WriteRequest): Promise<WriteOutcome> {
    let head = this.head ?? (await this.freshHead());
    for (let attempt = 1; ; attempt++) {
      if (request.expectedLogSeq !== undefined && head.seq !== request.expectedLogSeq) {
        if (head.seq > request.expectedLogSeq) return { kind: 'conflict', logMoved: true };
        // The command was decided against more of the log than this writer has seen: look again.
        head = await this.moveTo(head);
        if (head.seq !== request.expectedLogSeq) return { kind: 'conflict', logMoved: true };
      }
      const seq = head.seq + 1;
      if (seq > 1) await this.verifyRoot();
      const { hash, headers } = sealHeaders(this.options.key, head.hash, request.subject, seq, request.payload, Math.min(this.since, seq));
      try {
        const ack = await this.publishOnce(request.subject, request.payload, {
          msgID: request.msgID,
          expect: { ...(request.lastSubjectSequence !== undefined ? { lastSubjectSequence: request.lastSubjectSequence } : {}), lastSequence: head.seq },
          timeout: this.options.timeoutMs ?? 5_000,
          headers,
        });
        if (ack.duplicate) return { kind: 'duplicate', seq: ack.seq };
        this.head = { seq: ack.seq, hash };
        return this.stored(ack.seq);
      } catch (error) {
        if (!(error instanceof JetStreamApiError && WRONG_LAST_SEQUENCE.has(error.code))) {
          // Stored or not, this writer cannot tell: the next write reads the head again.
          this.head = undefined;
          throw error;
        }
        const fresh = await this.moveTo(head);
        // The log did not move: it was the aggregate's expectation that failed.
        if (fresh.seq === head.seq || attempt >= MAX_ATTEMPTS) return { kind: 'conflict', logMoved: fresh.seq !== head.seq && request.expectedLogSeq !== undefined, cause: error };
        head = fresh;
      }
    }
  }

  /**
   * Publishing the same commit again is safe — the server answers a repeat with the original
   * sequence, and both expectations make a second copy impossible — so an answer lost to a
   * timeout or a server that is still starting is simply asked for again.
   */
  private async publishOnce(subject: string, payload: Uint8Array, options: PublishOptions): Promise<PubAck> {
    const attempts = 3;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.publish(this.js, subject, payload, options);
      } catch (error) {
        if (!isTransientJetStreamError(error) || attempt >= attempts) throw error;
        await new Promise((r) => setTimeout(r, 100 * attempt));
      }
    }
  }

  /** The head read afresh, knowing nothing of what is before it: the stretch starts after it. */
  private async freshHead(): Promise<{ seq: number; hash: Uint8Array; msgID?: string }> {
    const head = await this.readHead();
    this.since = head.seq + 1;
    this.head = head;
    return head;
  }

  /**
   * The head again, after `from`: what others appended in between is checked, so the stretch this
   * writer answers for goes on through it — or starts again after the last one that does not verify.
   */
  private async moveTo(from: { seq: number; hash: Uint8Array }): Promise<{ seq: number; hash: Uint8Array }> {
    const head = await this.readHead();
    if (head.seq - from.seq > CHECKED_AT_MOST) {
      this.since = head.seq + 1;
    } else if (head.seq > from.seq) {
      const jsm = await this.jsm;
      let before = from.hash;
      for (let seq = from.seq + 1; seq <= head.seq; seq++) {
        const message = await jsm.streams.getMessage(this.options.stream, { seq });
        const link = message ? linkOf(rawOf(message)) : undefined;
        if (!link || chainProblem(link, this.options.key.publicKey, before)) this.since = seq + 1;
        before = link?.hash ?? new Uint8Array(0);
      }
    }
    this.head = head;
    return head;
  }

  /** The log's last sequence and the hash of the message there (from the leader). */
  private async readHead(): Promise<{ seq: number; hash: Uint8Array }> {
    const jsm = await this.jsm;
    const last = (await jsm.streams.info(this.options.stream)).state.last_seq;
    if (last === 0) return { seq: 0, hash: GENESIS_PREV };
    const message = await jsm.streams.getMessage(this.options.stream, { seq: last });
    if (!message) throw new RefusedError(`the mesh log (stream ${this.options.stream}) reports seq ${last} as its last, but holds no message there`, { stream: this.options.stream, seq: last });
    return { seq: last, hash: linkOf(rawOf(message)).hash };
  }

  /** Only the writer a log began with may extend it: its first commit names that writer's key. */
  private async verifyRoot(): Promise<void> {
    if (this.rootVerified) return;
    const first = await (await this.jsm).streams.getMessage(this.options.stream, { seq: 1 });
    const link = first ? linkOf(rawOf(first)) : undefined;
    const from = this.options.keySource ? ` (from ${this.options.keySource})` : '';
    if (!link?.key || chainProblem(link, link.key, GENESIS_PREV)) {
      throw new RefusedError(
        `cannot append to the mesh log (stream ${this.options.stream}): its first commit names no writer key it is signed with — it was begun before the log was signed, or not by a mesh writer — so nothing appended to it could be verified. Begin a new log.`,
        { stream: this.options.stream },
      );
    }
    if (link.key !== this.options.key.publicKey) {
      throw new RefusedError(
        `cannot append to the mesh log (stream ${this.options.stream}): it was begun by the writer with key ${link.key}, and this process holds key ${this.options.key.publicKey}${from}. Only the writer a log began with appends to it: run with that key (MESH_CONTROLLER_KEY).`,
        { stream: this.options.stream, logKey: link.key, key: this.options.key.publicKey },
      );
    }
    this.rootVerified = true;
  }
}
