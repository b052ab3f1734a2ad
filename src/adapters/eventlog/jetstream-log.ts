import { randomUUID } from 'node:crypto';
import {
  DeliverPolicy,
  JetStreamApiError,
  jetstream,
  jetstreamManager,
  type JetStreamClient,
  type JetStreamManager,
  type PubAck,
  type StoredMsg,
} from '@nats-io/jetstream';
import { errors as natsErrors, type NatsConnection } from '@nats-io/nats-core';
import { commandMetadataSchema, fieldOf, type Commit, type CommandMetadata, type ProposedEvent, type StoredEvent } from '../../domain/events/envelope.js';
import type { EventRegistry } from '../../domain/events/registry.js';
import { ConcurrencyError, ValidationError } from '../../errors.js';
import { decodeCommit, encodeCommit } from './codec.js';
import type { AggregateHistory, AppendOptions, AppendResult, EventLog, FollowItem, ReadOptions } from './event-log.js';
import { AggregateHeads } from './aggregate-heads.js';
import { aggregateOf, assertAggregate, filterSubjectOf, subjectOf } from './subjects.js';

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

// JetStream: "wrong last sequence" (10071) and, on newer servers, the batch variant (10164).
const WRONG_LAST_SEQUENCE = new Set([10071, 10164]);

export interface JetStreamEventLogOptions {
  stream: string;
  subjectPrefix: string;
  registry: EventRegistry;
  now?: () => Date;
  newId?: () => string;
  /** How long an append waits for the server's acknowledgement. */
  timeoutMs?: number;
  /** The transport behind publish; a seam for tests that must lose an acknowledgement. */
  publish?: (js: JetStreamClient, subject: string, payload: Uint8Array, options: PublishOptions) => Promise<PubAck>;
}

export interface PublishOptions {
  msgID: string;
  expect: { lastSubjectSequence: number; lastSequence?: number };
  timeout: number;
}

const realPublish = (js: JetStreamClient, subject: string, payload: Uint8Array, options: PublishOptions): Promise<PubAck> =>
  js.publish(subject, payload, options);

export class JetStreamEventLog implements EventLog {
  private readonly js: JetStreamClient;
  private readonly jsm: Promise<JetStreamManager>;
  private readonly heads = new AggregateHeads(100_000);
  private readonly now: () => Date;
  private readonly newId: () => string;
  private readonly publish: NonNullable<JetStreamEventLogOptions['publish']>;

  constructor(
    private readonly nc: NatsConnection,
    private readonly options: JetStreamEventLogOptions,
  ) {
    this.js = jetstream(nc);
    this.jsm = jetstreamManager(nc, { checkAPI: false });
    this.now = options.now ?? (() => new Date());
    this.newId = options.newId ?? randomUUID;
    this.publish = options.publish ?? realPublish;
  }

  async append(
    aggregate: string,
    events: readonly ProposedEvent[],
    expectedVersion: number,
    metadata: CommandMetadata,
    options: AppendOptions = {},
  ): Promise<AppendResult> {
    const subject = subjectOf(this.options.subjectPrefix, aggregate);
    const commit = this.stamp(aggregate, events, expectedVersion, metadata);
    if (options.signed) commit.command = options.signed;
    const payload = encodeCommit(commit);
    const maxPayload = this.nc.info?.max_payload ?? 1024 * 1024;
    if (payload.length > maxPayload) {
      throw new ValidationError(`${events.length} events for ${aggregate} encode to ${payload.length} bytes, more than the server's ${maxPayload}-byte message limit; split the command`, {
        field: 'events',
        bytes: payload.length,
      });
    }

    let lastSubjectSequence: number;
    if (expectedVersion === 0) {
      lastSubjectSequence = 0;
    } else {
      const cached = this.heads.get(aggregate);
      const head = cached?.version === expectedVersion ? cached : await this.fetchHead(aggregate);
      if (head.version !== expectedVersion) return this.onConflict(aggregate, expectedVersion, metadata);
      lastSubjectSequence = head.seq;
    }

    let ack: PubAck;
    try {
      ack = await this.publishOnce(subject, payload, {
        // Scoped by aggregate: a command may legitimately write to more than one aggregate.
        msgID: `${aggregate}:${metadata.commandId}`,
        expect: { lastSubjectSequence, ...(options.expectedLogSeq !== undefined ? { lastSequence: options.expectedLogSeq } : {}) },
        timeout: this.options.timeoutMs ?? 5_000,
      });
    } catch (error) {
      if (error instanceof JetStreamApiError && WRONG_LAST_SEQUENCE.has(error.code)) {
        this.heads.forget(aggregate);
        return this.onConflict(aggregate, expectedVersion, metadata, error, options.expectedLogSeq);
      }
      throw error;
    }
    if (ack.duplicate) return this.original(aggregate, ack.seq, expectedVersion);

    const stored: StoredEvent[] = commit.events.map((envelope, index) => ({ ...envelope, seq: ack.seq, index, version: commit.firstVersion + index, ...(commit.command ? { signed: commit.command } : {}) }));
    const version = expectedVersion + events.length;
    this.heads.set(aggregate, { version, seq: ack.seq });
    return { aggregate, expectedVersion, version, seq: ack.seq, duplicate: false, events: stored };
  }

  /**
   * Publishing the same command again is safe — the server answers a repeat with the original
   * sequence, and after its window the expectation fails and we find our own events — so an
   * answer lost to a timeout or a server that is still starting is simply asked for again.
   */
  private async publishOnce(subject: string, payload: Uint8Array, options: PublishOptions): Promise<PubAck> {
    const attempts = 3;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.publish(this.js, subject, payload, options);
      } catch (error) {
        const retryable = error instanceof natsErrors.TimeoutError || (error instanceof natsErrors.RequestError && error.isNoResponders());
        if (!retryable || attempt >= attempts) throw error;
        await new Promise((r) => setTimeout(r, 100 * attempt));
      }
    }
  }

  async readAggregate(aggregate: string): Promise<AggregateHistory> {
    const subject = subjectOf(this.options.subjectPrefix, aggregate);
    const last = await this.lastMessage(subject);
    if (!last) return { aggregate, version: 0, events: [] };
    const events: StoredEvent[] = [];
    for await (const event of this.readRange(subject, 1, last.seq)) events.push(event);
    const version = events.at(-1)?.version ?? 0;
    this.heads.set(aggregate, { version, seq: last.seq });
    return { aggregate, version, events };
  }

  async *read(options: ReadOptions = {}): AsyncIterable<StoredEvent> {
    const subject = this.filterOf(options);
    const last = await this.lastMessage(subject);
    const fromSeq = Math.max(1, options.fromSeq ?? 1);
    if (!last || last.seq < fromSeq) return;
    yield* this.readRange(subject, fromSeq, last.seq);
  }

  async *follow(options: ReadOptions & { signal?: AbortSignal } = {}): AsyncIterable<FollowItem> {
    const subject = this.filterOf(options);
    let fromSeq = Math.max(1, options.fromSeq ?? 1);
    const headAtStart = (await this.lastMessage(subject))?.seq ?? 0;
    let caughtUp = headAtStart < fromSeq;
    if (caughtUp) yield { kind: 'caught-up', seq: Math.max(headAtStart, fromSeq - 1) };

    const consumer = await this.js.consumers.get(this.options.stream, {
      filter_subjects: subject,
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: fromSeq,
    });
    const messages = await consumer.consume({ max_messages: 512 });
    const stop = (): void => void messages.stop();
    options.signal?.addEventListener('abort', stop, { once: true });
    try {
      for await (const message of messages) {
        // The ordered consumer recreates itself after a reconnect from the last sequence it
        // delivered; this guard keeps the promise even if a redelivery slipped through.
        if (message.seq < fromSeq) continue;
        fromSeq = message.seq + 1;
        const aggregate = aggregateOf(this.options.subjectPrefix, message.subject);
        for (const event of decodeCommit(this.options.registry, message.seq, aggregate, message.data)) yield { kind: 'event', event };
        if (!caughtUp && message.seq >= headAtStart) {
          caughtUp = true;
          yield { kind: 'caught-up', seq: message.seq };
        }
        if (options.signal?.aborted) break;
      }
    } finally {
      options.signal?.removeEventListener('abort', stop);
      messages.stop();
    }
  }

  async headSeq(): Promise<number> {
    const jsm = await this.jsm;
    const info = await jsm.streams.info(this.options.stream);
    return info.state.last_seq;
  }

  private filterOf(options: ReadOptions): string {
    return options.aggregate ? filterSubjectOf(this.options.subjectPrefix, options.aggregate) : `${this.options.subjectPrefix}.>`;
  }

  private stamp(aggregate: string, events: readonly ProposedEvent[], expectedVersion: number, metadata: CommandMetadata): Commit {
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
    return {
      firstVersion: expectedVersion + 1,
      events: events.map((event, i) => ({
        id: this.newId(),
        type: event.type,
        schemaVersion: this.knownVersion(event.type, `events.${i}`),
        aggregate,
        time,
        actor: metadata.actor,
        commandId: metadata.commandId,
        causationId: metadata.causationId ?? metadata.commandId,
        correlationId: metadata.correlationId ?? metadata.commandId,
        data: this.options.registry.validateNew(event.type, event.data, `events.${i}`),
      })),
    };
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
  ): Promise<AppendResult> {
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
  private async original(aggregate: string, seq: number, expectedVersion: number): Promise<AppendResult> {
    const jsm = await this.jsm;
    const message = await jsm.streams.getMessage(this.options.stream, { seq });
    if (!message) throw new Error(`the server reported command as a duplicate of seq ${seq}, which cannot be read`);
    const events = decodeCommit(this.options.registry, seq, aggregate, message.data);
    const first = events[0]?.version ?? expectedVersion + 1;
    return { aggregate, expectedVersion: first - 1, version: events.at(-1)?.version ?? first, seq, duplicate: true, events };
  }

  private async fetchHead(aggregate: string): Promise<{ version: number; seq: number }> {
    const last = await this.lastMessage(subjectOf(this.options.subjectPrefix, aggregate));
    if (!last) return { version: 0, seq: 0 };
    const events = decodeCommit(this.options.registry, last.seq, aggregate, last.data);
    const head = { version: events.at(-1)?.version ?? 0, seq: last.seq };
    this.heads.set(aggregate, head);
    return head;
  }

  /** From the stream leader (STREAM.MSG.GET), never a possibly stale Direct Get. */
  private async lastMessage(subject: string): Promise<StoredMsg | null> {
    const jsm = await this.jsm;
    return jsm.streams.getMessage(this.options.stream, { last_by_subj: subject });
  }

  private async *readRange(subject: string, fromSeq: number, toSeq: number): AsyncIterable<StoredEvent> {
    const consumer = await this.js.consumers.get(this.options.stream, {
      filter_subjects: subject,
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: fromSeq,
    });
    const messages = await consumer.consume({ max_messages: 1024 });
    try {
      for await (const message of messages) {
        if (message.seq > toSeq) break;
        const aggregate = aggregateOf(this.options.subjectPrefix, message.subject);
        yield* decodeCommit(this.options.registry, message.seq, aggregate, message.data);
        if (message.seq >= toSeq) break;
      }
    } finally {
      messages.stop();
    }
  }
}
