import { DeliverPolicy, jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager, type JsMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { ChainReader, heldError, StretchCheck, type CheckedCommit, type PassedCommit } from '../adapters/eventlog/chain-reader.js';
import { DEFAULT_PATIENCE, deliveriesOf, lastSeqUnder } from '../adapters/eventlog/deliveries.js';
import type { AnyEvent, StoredEvent } from '../domain/events/envelope.js';
import type { EventRegistry } from '../domain/events/registry.js';
import type { MeshError } from '../errors.js';

// The projector reads the log commit by commit — a commit is the unit it checkpoints — through
// an ordered consumer from the sequence after its checkpoint. The consumer keeps no state on the
// server: the checkpoint in PostgreSQL is the only record of how far a projection got, and a
// restarted reader simply starts from it again. `pending` (the server's count of messages after
// this one) tells catching up from live, as a hint only: a commit the reader hands on because
// nothing followed it for a while is marked `idle`, and is written at once whatever the count
// said (deliveries.ts). Every commit is checked as the log's whole-log readers
// check it — its link to the commit before and the writer's signature — once per process (the
// builds share it); one that does not verify or read is a stall at its sequence, one an operator
// voided comes through with no events and `passed` saying so.

export interface LogCommit<E extends AnyEvent = AnyEvent> {
  seq: number;
  events: StoredEvent<E>[];
  /** Messages stored after this one when it was delivered, as the server counted them: a hint, it can be wrong. */
  pending: number;
  /** Nothing followed this commit for a while: the reader holds nothing more, so what was read should be written now. */
  idle?: boolean;
  /** set when an operator voided this commit: it has no events, and the reader passes it by */
  passed?: PassedCommit;
}

/** A commit the projector cannot decode: a stall like any other, at its sequence. */
export class UnreadableCommit extends Error {
  constructor(
    readonly seq: number,
    readonly reason: MeshError,
  ) {
    super(reason.message, { cause: reason });
    this.name = 'UnreadableCommit';
  }
}

export interface LogSource<E extends AnyEvent = AnyEvent> {
  stream: string;
  subjectPrefix: string;
  registry: EventRegistry<E>;
}

/** What the reader takes of a delivered message. */
export type ConsumedMessage = Pick<JsMsg, 'seq' | 'subject' | 'data' | 'headers'> & { info: { pending: number } };

/** A commit as checked and decoded once, for every build. */
interface Decoded<E extends AnyEvent> {
  seq: number;
  events: StoredEvent<E>[];
  hash: Uint8Array;
  /** an operator voided it: it has no events */
  passed?: PassedCommit;
}

/** How many decoded commits a reader keeps for the other builds reading the same stretch of log. */
const SHARED_COMMITS = 8_192;

export class CommitReader<E extends AnyEvent = AnyEvent> {
  private readonly js: JetStreamClient;
  private readonly jsm: Promise<JetStreamManager>;
  // Every build of a projector reads the same log, usually the same stretch of it (a rebuild starts
  // them all at 1). A commit's bytes never change once stored (no deletes, no purges), so it is
  // decoded once and handed to each build: read-only events, shared. A ring indexed by sequence:
  // a Map trimmed from its oldest end costs more per commit, as deleted entries pile up in front.
  // The entry keeps the commit's hash, so a build starting right after it links without a lookup.
  private readonly decoded: (Decoded<E> | undefined)[] = new Array(SHARED_COMMITS);
  private readonly chain: ChainReader<E>;

  constructor(
    nc: NatsConnection,
    private readonly source: LogSource<E>,
  ) {
    this.js = jetstream(nc);
    this.jsm = jetstreamManager(nc, { checkAPI: false });
    this.chain = new ChainReader(this.jsm, this.js, source);
  }

  /** The LOG sequence of the newest commit and when it was stored (0 and null when the log is empty). */
  async head(): Promise<{ seq: number; time: Date | null }> {
    const info = await (await this.jsm).streams.info(this.source.stream);
    return { seq: info.state.last_seq, time: info.state.last_seq > 0 ? new Date(info.state.last_ts) : null };
  }

  /** When the log stored the commit at `seq` (null when it holds none there). */
  async storedAt(seq: number): Promise<Date | null> {
    const message = await (await this.jsm).streams.getMessage(this.source.stream, { seq }).catch(() => null);
    return message ? message.time : null;
  }

  /** What the consumer delivers, as this reader sees it; a test may lay a fault over it (a wrong pending count). */
  protected delivered(messages: AsyncIterable<JsMsg>): AsyncIterable<ConsumedMessage> {
    return messages;
  }

  /** Every commit from `fromSeq` on, then whatever arrives, until `signal` aborts. */
  async *commits(fromSeq: number, signal: AbortSignal): AsyncIterable<LogCommit<E>> {
    const start = Math.max(1, fromSeq);
    const filter = `${this.source.subjectPrefix}.>`;
    const consumer = await this.js.consumers.get(this.source.stream, {
      filter_subjects: filter,
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: start,
    });
    const messages = await consumer.consume({ max_messages: 2048 });
    const stop = (): void => void messages.stop();
    signal.addEventListener('abort', stop, { once: true });
    // Aborted while the consumer was being made: the event has fired already, and would be missed.
    if (signal.aborted) stop();
    let next = start;
    let key = await this.chain.rootKey();
    const before = this.decoded[(start - 1) % SHARED_COMMITS]?.seq === start - 1 ? (this.decoded[(start - 1) % SHARED_COMMITS]?.hash as Uint8Array) : await this.chain.hashAt(start - 1);
    const stretch = new StretchCheck(this.source, before);
    // What the server said was stored after each commit held back in the stretch, for when it is decided.
    const pendingOf = new Map<number, number>();
    const entryOf = async (checked: CheckedCommit<E>): Promise<Decoded<E>> => {
      if (checked.problem) {
        const voided = await this.chain.voidOf(checked.seq);
        if (!voided) throw new UnreadableCommit(checked.seq, heldError(checked.seq, checked.aggregate, checked.problem, checked.cause));
        return { seq: checked.seq, events: [], hash: checked.link.hash, passed: voided };
      }
      return { seq: checked.seq, events: checked.events ?? [], hash: checked.link.hash };
    };
    const commitOf = (entry: Decoded<E>, pending: number): LogCommit<E> => ({ seq: entry.seq, events: entry.events, pending, ...(entry.passed ? { passed: entry.passed } : {}) });
    // A commit the server said more follows is handed on when the next arrives, or when nothing
    // arrives for a while (deliveries.ts): a reader never keeps the last one waiting.
    let promised: LogCommit<E> | undefined;
    const ready: LogCommit<E>[] = [];
    const handOn = (commit: LogCommit<E>): void => {
      if (promised) ready.push(promised);
      promised = commit.pending > 0 ? commit : undefined;
      if (!promised) ready.push(commit);
    };
    // Returns the commit it is held at, if any, having handed on everything before it.
    const decide = async (decided: CheckedCommit<E>[], pendingAt: (seq: number) => number): Promise<UnreadableCommit | undefined> => {
      for (const checked of decided) {
        let entry: Decoded<E>;
        try {
          entry = await entryOf(checked);
        } catch (error) {
          if (!(error instanceof UnreadableCommit)) throw error;
          if (promised) ready.push(promised);
          promised = undefined;
          return error;
        }
        this.decoded[entry.seq % SHARED_COMMITS] = entry;
        handOn(commitOf(entry, pendingAt(entry.seq)));
        pendingOf.delete(entry.seq);
      }
      return undefined;
    };
    const lastStored = async (): Promise<number> => lastSeqUnder(await this.jsm, this.source.stream, filter);
    try {
      for await (const delivery of deliveriesOf(this.delivered(messages), lastStored, DEFAULT_PATIENCE, messages)) {
        let held: UnreadableCommit | undefined;
        if (delivery.kind === 'idle') {
          // Nothing came after what the server promised: decide everything held back, and hand it on as idle.
          held = await decide(stretch.flush(key), (seq) => pendingOf.get(seq) ?? 0);
          if (promised) ready.push({ ...promised, idle: true });
          else if (!held && ready.length > 0) ready[ready.length - 1] = { ...(ready[ready.length - 1] as LogCommit<E>), idle: true };
          promised = undefined;
        } else {
          const message = delivery.message;
          // After a reconnect the ordered consumer restarts from the last sequence it delivered.
          if (message.seq < next) continue;
          next = message.seq + 1;
          const slot = message.seq % SHARED_COMMITS;
          const cached = this.decoded[slot]?.seq === message.seq ? this.decoded[slot] : undefined;
          key ??= await this.chain.rootKey();
          // Another build checked it already: what this one holds back is decided first, in order.
          const decided = cached ? stretch.flush(key) : stretch.push({ seq: message.seq, subject: message.subject, data: message.data, headers: message.headers }, key, delivery.pending === 0);
          if (!cached) pendingOf.set(message.seq, delivery.pending);
          held = await decide(decided, (seq) => pendingOf.get(seq) ?? 0);
          if (cached && !held) {
            stretch.after(cached.hash);
            handOn(commitOf(cached, delivery.pending));
          }
        }
        for (const commit of ready) yield commit;
        ready.length = 0;
        if (held) throw held;
        if (signal.aborted) break;
      }
    } finally {
      signal.removeEventListener('abort', stop);
      messages.stop();
    }
  }
}
