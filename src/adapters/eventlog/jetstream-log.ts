import { randomUUID } from 'node:crypto';
import { DeliverPolicy, jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager, type StoredMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { commandMetadataSchema, fieldOf, type AnyEvent, type CommandMetadata, type EventEnvelope, type ProposedEvent, type StoredEvent } from '../../domain/events/envelope.js';
import type { EventRegistry } from '../../domain/events/registry.js';
import { ConcurrencyError, RefusedError, ValidationError } from '../../errors.js';
import { decodeCommit, encodeCommit } from './codec.js';
import { GENESIS_PREV, linkOf } from './chain.js';
import { ChainReader, heldError, rawOf, StretchCheck, warnPassed, type CheckedCommit, type CommitFinding, type PassedCommit, type RawMessage } from './chain-reader.js';
import type { AggregateHistory, AppendOptions, AppendResult, EventLog, FollowItem, IssuedAppend, IssuedOutcome, ReadOptions } from './event-log.js';
import { AggregateHeads } from './aggregate-heads.js';
import { DEFAULT_PATIENCE, deliveriesOf } from './deliveries.js';
import type { LogWriter } from './log-writer.js';
import { assertAggregate, filterSubjectOf, subjectOf } from './subjects.js';

export type { PublishOptions } from './log-writer.js';

// The mesh log on a JetStream stream.
//
// An aggregate's version counts its events (1, 2, 3… gap-free). The server guards a subject by
// the stream sequence of its last message (Nats-Expected-Last-Subject-Sequence), so an append maps
// the expected version to that sequence — from a cache of heads this process has seen, or one
// STREAM.MSG.GET to the leader — and lets the server refuse if anything landed in between.
//
// Idempotency: the command id is the Nats-Msg-Id (a retry inside the server's window is answered
// with the original sequence) and it is stored in every event, so a retry after the window finds
// its own events when the expectation fails, and returns them instead of appending again.
//
// Appends go through the process's one LogWriter, which signs each commit and chains it to the
// one before (chain.ts). Reads check every commit: readers of the whole log its link and its
// signature (one signature answering for a stretch the writer vouches for, chain-reader.ts),
// readers of one aggregate its signature (they never see the commit before it). A
// commit that does not verify or read holds the reader at its sequence until an operator voids
// it; a voided one is passed by, and the reader is told (`onPassed`, or a `passed` item).

export interface JetStreamEventLogOptions<E extends AnyEvent = AnyEvent> {
  stream: string;
  subjectPrefix: string;
  registry: EventRegistry<E>;
  /** The process's writer of this stream: without one the log reads but refuses to append. */
  writer?: LogWriter;
  now?: () => Date;
  newId?: () => string;
  /** Told of every voided commit a read passes by, when the read itself was given no `onPassed`. */
  onPassed?: (passed: PassedCommit) => void;
  /** How often a follower held at a commit looks for its void again. */
  holdRetry?: { initialMs: number; maxMs: number };
}

const DEFAULT_HOLD_RETRY = { initialMs: 250, maxMs: 10_000 };

/**
 * A server taking a new configuration (the bus's user list, reloaded live) answers its JetStream
 * API with "jetstream is not enabled" or no responders for a moment: asked again a few times
 * over about two seconds before the error stands.
 */
const whileReloading = async <T>(request: () => Promise<T>): Promise<T> => {
  for (let attempt = 1; ; attempt++) {
    try {
      return await request();
    } catch (error) {
      const reloading = error instanceof Error && (error.name === 'JetStreamNotEnabled' || /jetstream is not enabled|no responders/i.test(error.message));
      if (!reloading || attempt >= 6) throw error;
      await new Promise((r) => setTimeout(r, 100 * attempt));
    }
  }
};

const sleep = (ms: number, signal: AbortSignal | undefined): Promise<void> =>
  new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });

const rawOfConsumed = (message: { seq: number; subject: string; data: Uint8Array; headers: RawMessage['headers'] }): RawMessage => ({
  seq: message.seq,
  subject: message.subject,
  data: message.data,
  headers: message.headers,
});

export class JetStreamEventLog<E extends AnyEvent = AnyEvent> implements EventLog<E> {
  private readonly js: JetStreamClient;
  private readonly jsm: Promise<JetStreamManager>;
  private readonly heads = new AggregateHeads(100_000);
  private readonly now: () => Date;
  private readonly newId: () => string;
  private readonly chain: ChainReader<E>;

  constructor(
    private readonly nc: NatsConnection,
    private readonly options: JetStreamEventLogOptions<E>,
  ) {
    this.js = jetstream(nc);
    this.jsm = jetstreamManager(nc, { checkAPI: false });
    this.now = options.now ?? (() => new Date());
    this.newId = options.newId ?? randomUUID;
    this.chain = new ChainReader(this.jsm, this.js, options);
    if (options.writer && options.writer.stream !== options.stream) {
      throw new ValidationError(`the writer given writes stream ${options.writer.stream}, not ${options.stream}`, { field: 'writer' });
    }
  }

  async append(
    aggregate: string,
    events: readonly ProposedEvent[],
    expectedVersion: number,
    metadata: CommandMetadata,
    options: AppendOptions = {},
  ): Promise<AppendResult<E>> {
    const writer = this.options.writer;
    if (!writer) {
      throw new RefusedError(
        `appending to ${aggregate} refused: this process holds no writer key for the mesh log (stream ${this.options.stream}); it reads the log but does not append to it — the controller's writer does (its key: MESH_CONTROLLER_KEY)`,
        { aggregate, stream: this.options.stream },
      );
    }
    const { subject, stamped, payload } = this.commitOf(aggregate, events, expectedVersion, metadata, options.signed);

    let lastSubjectSequence: number;
    if (expectedVersion === 0) {
      // A new aggregate, unless its subject holds only commits an operator voided: then the
      // subject's last sequence is what the server checks, and a read of it has been cached.
      const cached = this.heads.get(aggregate);
      lastSubjectSequence = cached?.version === 0 ? cached.seq : 0;
    } else {
      const cached = this.heads.get(aggregate);
      const head = cached?.version === expectedVersion ? cached : await this.fetchHead(aggregate);
      if (head.version !== expectedVersion) return this.onConflict(aggregate, expectedVersion, metadata);
      lastSubjectSequence = head.seq;
    }

    const msgID = `${aggregate}:${metadata.commandId}`; // scoped by aggregate: a command may write to more than one
    const outcome = await writer.write({
      subject,
      payload,
      msgID,
      lastSubjectSequence,
      ...(options.expectedLogSeq !== undefined ? { expectedLogSeq: options.expectedLogSeq } : {}),
    });
    if (outcome.kind === 'conflict') {
      this.heads.forget(aggregate);
      return this.onConflict(aggregate, expectedVersion, metadata, outcome.cause, options.expectedLogSeq);
    }
    if (outcome.kind === 'duplicate') return this.original(aggregate, outcome.seq, expectedVersion);

    const seq = outcome.seq;
    const stored: StoredEvent<E>[] = stamped.map((envelope, index) => ({ ...envelope, seq, index, version: expectedVersion + 1 + index, ...(options.signed ? { signed: options.signed } : {}) }));
    const version = expectedVersion + events.length;
    this.heads.set(aggregate, { version, seq });
    return { aggregate, expectedVersion, version, seq, duplicate: false, events: stored };
  }

  /**
   * A mesh command's events, issued behind the commits still in flight (LogWriter.issue): signed
   * as the commit after `expectedLogSeq` and conditioned on the log ending exactly there. `issued`
   * resolves with the events as the log will hold them (decoded from the bytes sent, so a fold of
   * them is the fold of the commit) once they are sent, or undefined when the log does not end
   * there (nothing sent); `result` with the server's answer. The whole log's expectation is the
   * aggregate's too, so no subject sequence is asked for.
   */
  issueAppend(aggregate: string, events: readonly ProposedEvent[], expectedVersion: number, metadata: CommandMetadata, options: AppendOptions & { expectedLogSeq: number }): IssuedAppend<E> {
    const writer = this.options.writer;
    if (!writer) throw new RefusedError(`appending to ${aggregate} refused: this process holds no writer key for the mesh log (stream ${this.options.stream})`, { aggregate, stream: this.options.stream });
    const { subject, payload } = this.commitOf(aggregate, events, expectedVersion, metadata, options.signed);
    const write = writer.issue({ subject, payload, msgID: `${aggregate}:${metadata.commandId}`, expectedLogSeq: options.expectedLogSeq });
    const issued = write.issued.then((at) => (at ? decodeCommit(this.options.registry, at.seq, aggregate, payload) : undefined));
    const result = Promise.all([issued, write.outcome]).then(([stored, outcome]): IssuedOutcome<E> => {
      if (outcome.kind !== 'stored' || !stored) return { kind: outcome.kind === 'duplicate' ? 'duplicate' : 'conflict', seq: outcome.kind === 'conflict' ? undefined : outcome.seq };
      const version = expectedVersion + events.length;
      this.heads.set(aggregate, { version, seq: outcome.seq });
      return { kind: 'stored', append: { aggregate, expectedVersion, version, seq: outcome.seq, duplicate: false, events: stored } };
    });
    return { issued, result };
  }

  async readAggregate(aggregate: string, options: Pick<ReadOptions, 'onPassed'> = {}): Promise<AggregateHistory<E>> {
    const subject = subjectOf(this.options.subjectPrefix, aggregate);
    const last = await this.lastMessage(subject);
    if (!last) return { aggregate, version: 0, events: [] };
    const events: StoredEvent<E>[] = [];
    for await (const event of this.readRange(subject, 1, last.seq, false, options.onPassed)) events.push(event);
    const version = events.at(-1)?.version ?? 0;
    this.heads.set(aggregate, { version, seq: last.seq });
    return { aggregate, version, events };
  }

  async *read(options: ReadOptions = {}): AsyncIterable<StoredEvent<E>> {
    const subject = this.filterOf(options);
    const last = await this.lastMessage(subject);
    const fromSeq = Math.max(1, options.fromSeq ?? 1);
    if (!last || last.seq < fromSeq) return;
    yield* this.readRange(subject, fromSeq, last.seq, options.aggregate === undefined, options.onPassed);
  }

  async *follow(options: ReadOptions & { signal?: AbortSignal } = {}): AsyncIterable<FollowItem<E>> {
    const subject = this.filterOf(options);
    const wholeLog = options.aggregate === undefined;
    const signal = options.signal;
    let fromSeq = Math.max(1, options.fromSeq ?? 1);
    const headAtStart = (await this.lastMessage(subject))?.seq ?? 0;
    let caughtUp = headAtStart < fromSeq;
    if (caughtUp) yield { kind: 'caught-up', seq: Math.max(headAtStart, fromSeq - 1) };
    let key = await this.chain.rootKey();
    // The hash the next commit links to, once known: a follower that starts beyond the head
    // learns it from the commit before the first one it is given, when that one exists.
    let before = wholeLog && fromSeq - 1 <= headAtStart ? { seq: fromSeq - 1, hash: await this.chain.hashAt(fromSeq - 1) } : undefined;
    const retry = this.options.holdRetry ?? DEFAULT_HOLD_RETRY;

    while (!signal?.aborted) {
      const consumer = await this.js.consumers.get(this.options.stream, {
        filter_subjects: subject,
        deliver_policy: DeliverPolicy.StartSequence,
        opt_start_seq: fromSeq,
      });
      const messages = await consumer.consume({ max_messages: 512 });
      const stop = (): void => void messages.stop();
      signal?.addEventListener('abort', stop, { once: true });
      // Aborted while the consumer was being made: the event has fired already, and would be missed.
      if (signal?.aborted) stop();
      let check: ReturnType<JetStreamEventLog<E>['checker']> | undefined;
      let held: { seq: number; aggregate: string; problem: string; hash: Uint8Array } | undefined;
      let taken = fromSeq - 1;
      try {
        consuming: for await (const delivery of deliveriesOf(messages, async () => (await this.lastMessage(subject))?.seq ?? 0, DEFAULT_PATIENCE, messages)) {
          let decided: CheckedCommit<E>[];
          if (delivery.kind === 'idle') {
            // Nothing followed for a while, whatever the server said would: what is held back is decided now.
            decided = check?.flush(key) ?? [];
          } else {
            const message = delivery.message;
            // The ordered consumer recreates itself after a reconnect from the last sequence it
            // delivered; this guard keeps the promise even if a redelivery slipped through.
            if (message.seq <= taken) continue;
            taken = message.seq;
            key ??= await this.chain.rootKey();
            check ??= this.checker(wholeLog, !wholeLog ? GENESIS_PREV : before?.seq === message.seq - 1 ? before.hash : await this.chain.hashAt(message.seq - 1));
            // Caught up with what is stored now: decide what is held back, so live commits are not delayed.
            decided = check.push(rawOfConsumed(message), key, delivery.pending === 0);
          }
          for (const checked of decided) {
            if (checked.problem) {
              const voided = await this.chain.voidOf(checked.seq);
              if (!voided) {
                held = { seq: checked.seq, aggregate: checked.aggregate, problem: checked.problem, hash: checked.link.hash };
                break consuming;
              }
              yield { kind: 'passed', commit: voided };
            } else {
              for (const event of checked.events ?? []) yield { kind: 'event', event };
            }
            fromSeq = checked.seq + 1;
            before = { seq: checked.seq, hash: checked.link.hash };
            if (wholeLog) this.chain.remember(checked.seq, checked.link.hash);
            if (!caughtUp && checked.seq >= headAtStart) {
              caughtUp = true;
              yield { kind: 'caught-up', seq: checked.seq };
            }
            if (signal?.aborted) break consuming;
          }
        }
      } finally {
        signal?.removeEventListener('abort', stop);
        messages.stop();
      }
      if (!held) return;

      // Held: said once, then the voids are read again on a backoff until one names this commit.
      yield { kind: 'held', seq: held.seq, aggregate: held.aggregate, problem: held.problem };
      let voided: PassedCommit | undefined;
      for (let delay = retry.initialMs; !voided; delay = Math.min(delay * 2, retry.maxMs)) {
        await sleep(delay, signal);
        if (signal?.aborted) return;
        voided = await this.chain.voidOf(held.seq).catch(() => undefined);
      }
      yield { kind: 'passed', commit: voided };
      fromSeq = held.seq + 1;
      before = { seq: held.seq, hash: held.hash };
      if (!caughtUp && held.seq >= headAtStart) {
        caughtUp = true;
        yield { kind: 'caught-up', seq: held.seq };
      }
    }
  }

  /**
   * How a reader checks what it reads: a reader of the whole log in stretches (links as they come,
   * one signature answering for a stretch), a reader of one aggregate each commit's signature.
   */
  /** Checks messages in order: one at a time for one aggregate, in stretches for the whole log (chain-reader.ts). */
  private checker(wholeLog: boolean, before: Uint8Array): Pick<StretchCheck<E>, 'push' | 'flush'> {
    if (!wholeLog) return { push: (message, key) => [this.chain.check(message, key)], flush: () => [] };
    return new StretchCheck(this.options, before);
  }

  async headSeq(): Promise<number> {
    const jsm = await this.jsm;
    const info = await jsm.streams.info(this.options.stream);
    return info.state.last_seq;
  }

  inspect(seq: number): Promise<CommitFinding> {
    return this.chain.inspect(seq);
  }

  voids(): Promise<ReadonlyMap<number, PassedCommit>> {
    return this.chain.voids();
  }

  writerKey(): Promise<string | undefined> {
    return this.chain.rootKey();
  }

  async commitDigest(seq: number): Promise<string | undefined> {
    const message = seq >= 1 ? await this.chain.get(seq) : null;
    return message ? Buffer.from(linkOf(message).hash).toString('hex') : undefined;
  }

  private filterOf(options: ReadOptions): string {
    return options.aggregate ? filterSubjectOf(this.options.subjectPrefix, options.aggregate) : `${this.options.subjectPrefix}.>`;
  }

  /** The commit one command's events make: stamped, encoded, and refused when larger than the server takes. */
  private commitOf(aggregate: string, events: readonly ProposedEvent[], expectedVersion: number, metadata: CommandMetadata, signed: AppendOptions['signed']): { subject: string; stamped: EventEnvelope<E>[]; payload: Uint8Array } {
    const stamped = this.stamp(aggregate, events, expectedVersion, metadata);
    const payload = encodeCommit({ firstVersion: expectedVersion + 1, events: stamped, ...(signed ? { command: signed } : {}) });
    const maxPayload = this.nc.info?.max_payload ?? 1024 * 1024;
    if (payload.length > maxPayload) {
      throw new ValidationError(`${events.length} events for ${aggregate} encode to ${payload.length} bytes, more than the server's ${maxPayload}-byte message limit; split the command`, {
        field: 'events',
        bytes: payload.length,
      });
    }
    return { subject: subjectOf(this.options.subjectPrefix, aggregate), stamped, payload };
  }

  /** The events as the commit carries them: stamped, and each checked by its type's schema (the error names the field). */
  private stamp(aggregate: string, events: readonly ProposedEvent[], expectedVersion: number, metadata: CommandMetadata): EventEnvelope<E>[] {
    assertAggregate(aggregate);
    if (!Number.isInteger(expectedVersion) || expectedVersion < 0) {
      throw new ValidationError(`expected version must be a whole number ≥ 0 (0: a new aggregate), not ${expectedVersion}`, { field: 'expectedVersion' });
    }
    if (events.length === 0) throw new ValidationError(`nothing to append to ${aggregate}: a command decided no events`, { field: 'events' });
    const meta = commandMetadataSchema.safeParse(metadata);
    if (!meta.success) {
      const field = fieldOf('metadata', meta.error.issues[0]);
      throw new ValidationError(`${field}: ${meta.error.issues[0]?.message ?? 'invalid'}`, { field });
    }
    const time = this.now().toISOString();
    // The event as its schema parsed it replaces `type` and `data` (which keep their place in the encoded commit).
    return events.map((event, i) => Object.assign({
      id: this.newId(),
      type: event.type,
      schemaVersion: this.knownVersion(event.type, `events.${i}`),
      aggregate,
      time,
      actor: metadata.actor,
      commandId: metadata.commandId,
      causationId: metadata.causationId ?? metadata.commandId,
      correlationId: metadata.correlationId ?? metadata.commandId,
      data: event.data,
    }, this.options.registry.validateNew(event.type, event.data, `events.${i}`)));
  }

  private knownVersion(type: string, where: string): number {
    try {
      return this.options.registry.currentVersion(type);
    } catch {
      throw new ValidationError(`unknown event type ${type} at ${where}; known types: ${this.options.registry.types().join(', ')}`, {
        field: `${where}.type`,
        type,
      });
    }
  }

  /** The expectation failed: either this command already landed (return it) or another did. */
  private async onConflict(
    aggregate: string,
    expectedVersion: number,
    metadata: CommandMetadata,
    cause?: unknown,
    expectedLogSeq?: number,
  ): Promise<AppendResult<E>> {
    const history = await this.readAggregate(aggregate);
    const own = history.events.filter((event) => event.commandId === metadata.commandId);
    const first = own[0];
    if (first) {
      const commit = own.filter((event) => event.seq === first.seq);
      return { aggregate, expectedVersion: first.version - 1, version: commit.at(-1)?.version ?? first.version, seq: first.seq, duplicate: true, events: commit };
    }
    const logMoved = history.version === expectedVersion && expectedLogSeq !== undefined;
    throw new ConcurrencyError(aggregate, expectedVersion, history.version, {
      ...(cause === undefined ? {} : { cause }),
      ...(logMoved ? { logMoved: { expectedSeq: expectedLogSeq } } : {}),
    });
  }

  /** The server recognised the command id inside its window: answer with what was stored then. */
  private async original(aggregate: string, seq: number, expectedVersion: number): Promise<AppendResult<E>> {
    const message = await this.chain.get(seq);
    if (!message) throw new Error(`the server reported command as a duplicate of seq ${seq}, which cannot be read`);
    const checked = this.chain.check(message, await this.chain.rootKey());
    if (!checked.events) throw heldError(seq, aggregate, checked.problem ?? 'it does not read', checked.cause);
    const events = checked.events;
    const first = events[0]?.version ?? expectedVersion + 1;
    return { aggregate, expectedVersion: first - 1, version: events.at(-1)?.version ?? first, seq, duplicate: true, events };
  }

  private async fetchHead(aggregate: string): Promise<{ version: number; seq: number }> {
    const last = await this.lastMessage(subjectOf(this.options.subjectPrefix, aggregate));
    if (!last) return { version: 0, seq: 0 };
    const checked = this.chain.check(rawOf(last), await this.chain.rootKey());
    // A last commit that does not verify says nothing of the version: the whole aggregate is read
    // (which passes it if voided, and otherwise stops there, naming it).
    if (!checked.events) return { version: (await this.readAggregate(aggregate)).version, seq: last.seq };
    const head = { version: checked.events.at(-1)?.version ?? 0, seq: last.seq };
    this.heads.set(aggregate, head);
    return head;
  }

  /** From the stream leader (STREAM.MSG.GET), never a possibly stale Direct Get. */
  private async lastMessage(subject: string): Promise<StoredMsg | null> {
    const jsm = await this.jsm;
    return whileReloading(() => jsm.streams.getMessage(this.options.stream, { last_by_subj: subject }));
  }

  /**
   * Every commit of `subject` from `fromSeq` to `toSeq`, checked: its signature, and its link when
   * it is read as part of the whole log. Throws at one that does not verify or read, unless voided.
   */
  private async *readRange(subject: string, fromSeq: number, toSeq: number, wholeLog: boolean, onPassed?: (passed: PassedCommit) => void): AsyncIterable<StoredEvent<E>> {
    const key = await this.chain.rootKey();
    const check = this.checker(wholeLog, wholeLog ? await this.chain.hashAt(fromSeq - 1) : GENESIS_PREV);
    const consumer = await whileReloading(() =>
      this.js.consumers.get(this.options.stream, {
        filter_subjects: subject,
        deliver_policy: DeliverPolicy.StartSequence,
        opt_start_seq: fromSeq,
      }),
    );
    const messages = await consumer.consume({ max_messages: 1024 });
    try {
      for await (const message of messages) {
        if (message.seq > toSeq) break;
        const last = message.seq >= toSeq;
        for (const checked of check.push(rawOfConsumed(message), key, last || message.info.pending === 0)) {
          if (checked.problem) {
            const voided = await this.chain.voidOf(checked.seq);
            if (!voided) throw heldError(checked.seq, checked.aggregate, checked.problem, checked.cause);
            (onPassed ?? this.options.onPassed ?? warnPassed)(voided);
          } else {
            yield* checked.events ?? [];
          }
          if (wholeLog) this.chain.remember(checked.seq, checked.link.hash);
        }
        if (last) break;
      }
    } finally {
      messages.stop();
    }
  }
}
