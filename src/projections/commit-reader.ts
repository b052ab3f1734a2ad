import { DeliverPolicy, jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { ChainReader, heldError, type PassedCommit } from '../adapters/eventlog/chain-reader.js';
import type { StoredEvent } from '../domain/events/envelope.js';
import type { EventRegistry } from '../domain/events/registry.js';
import type { MeshError } from '../errors.js';

// The projector reads the log commit by commit — a commit is the unit it checkpoints — through
// an ordered consumer from the sequence after its checkpoint. The consumer keeps no state on the
// server: the checkpoint in PostgreSQL is the only record of how far a projection got, and a
// restarted reader simply starts from it again. `pending` (the server's count of messages after
// this one) tells catching up from live. Every commit is checked as the log's whole-log readers
// check it — its link to the commit before and the writer's signature — once per process (the
// builds share it); one that does not verify or read is a stall at its sequence, one an operator
// voided comes through with no events and `passed` saying so.

export interface LogCommit {
  seq: number;
  events: StoredEvent[];
  /** Messages stored after this one when it was delivered: 0 means this commit was the head. */
  pending: number;
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

export interface LogSource {
  stream: string;
  subjectPrefix: string;
  registry: EventRegistry;
}

/** How many decoded commits a reader keeps for the other builds reading the same stretch of log. */
const SHARED_COMMITS = 8_192;

export class CommitReader {
  private readonly js: JetStreamClient;
  private readonly jsm: Promise<JetStreamManager>;
  // Every build of a projector reads the same log, usually the same stretch of it (a rebuild starts
  // them all at 1). A commit's bytes never change once stored (no deletes, no purges), so it is
  // decoded once and handed to each build: read-only events, shared. A ring indexed by sequence:
  // a Map trimmed from its oldest end costs more per commit, as deleted entries pile up in front.
  // The entry keeps the commit's hash, so a build starting right after it links without a lookup.
  private readonly decoded: ({ seq: number; events: StoredEvent[]; hash: Uint8Array; passed?: PassedCommit } | undefined)[] = new Array(SHARED_COMMITS);
  private readonly chain: ChainReader;

  constructor(
    nc: NatsConnection,
    private readonly source: LogSource,
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

  /** Every commit from `fromSeq` on, then whatever arrives, until `signal` aborts. */
  async *commits(fromSeq: number, signal: AbortSignal): AsyncIterable<LogCommit> {
    const start = Math.max(1, fromSeq);
    const consumer = await this.js.consumers.get(this.source.stream, {
      filter_subjects: `${this.source.subjectPrefix}.>`,
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: start,
    });
    const messages = await consumer.consume({ max_messages: 2048 });
    const stop = (): void => void messages.stop();
    signal.addEventListener('abort', stop, { once: true });
    let next = start;
    let key = await this.chain.rootKey();
    let before = this.decoded[(start - 1) % SHARED_COMMITS]?.seq === start - 1 ? (this.decoded[(start - 1) % SHARED_COMMITS]?.hash as Uint8Array) : await this.chain.hashAt(start - 1);
    try {
      for await (const message of messages) {
        // After a reconnect the ordered consumer restarts from the last sequence it delivered.
        if (message.seq < next) continue;
        next = message.seq + 1;
        const slot = message.seq % SHARED_COMMITS;
        let entry = this.decoded[slot]?.seq === message.seq ? this.decoded[slot] : undefined;
        if (!entry) {
          key ??= await this.chain.rootKey();
          const checked = this.chain.check({ seq: message.seq, subject: message.subject, data: message.data, headers: message.headers }, key, before);
          if (checked.problem) {
            const voided = await this.chain.voidOf(message.seq);
            if (!voided) throw new UnreadableCommit(message.seq, heldError(message.seq, checked.aggregate, checked.problem, checked.cause));
            entry = { seq: message.seq, events: [], hash: checked.link.hash, passed: voided };
          } else {
            entry = { seq: message.seq, events: checked.events ?? [], hash: checked.link.hash };
          }
          this.decoded[slot] = entry;
        }
        before = entry.hash;
        yield { seq: message.seq, events: entry.events, pending: message.info.pending, ...(entry.passed ? { passed: entry.passed } : {}) };
        if (signal.aborted) break;
      }
    } finally {
      signal.removeEventListener('abort', stop);
      messages.stop();
    }
  }
}
