import { DeliverPolicy, type JetStreamClient, type JetStreamManager, type StoredMsg } from '@nats-io/jetstream';
import type { MsgHdrs } from '@nats-io/nats-core';
import type { AnyEvent, StoredEvent } from '../../domain/events/envelope.js';
import type { EventRegistry } from '../../domain/events/registry.js';
import { LogVoided, VOIDS_KIND } from '../../domain/log/events.js';
import type { CommitFinding, PassedCommit } from '../../domain/log/void.js';
import { CorruptEventError, MeshError } from '../../errors.js';
import { chainProblem, GENESIS_PREV, linkOf, linkProblem, sameBytes, signatureProblem, type ChainLink } from './chain.js';
import { decodeCommit } from './codec.js';
import { deliveriesOf, type DeliveryPatience } from './deliveries.js';
import { aggregateOf } from './subjects.js';

export type { CommitFinding, PassedCommit } from '../../domain/log/void.js';

/** Voids are few: a consumer that has not delivered the last one after 10 s has stalled. */
const VOID_PATIENCE: DeliveryPatience = { quietMs: 200, idleMs: 1_000, stalledMs: 10_000 };

// What every reader of the log needs besides the bytes: the key the log's writer signs with
// (named by the first commit), the hash of the commit before the first one it reads, and the
// voids. A commit that does not verify or does not read holds every reader at its sequence; a
// void recorded by an operator (and signed by the writer like every commit) lets them pass it,
// and they say so.

export interface LogSourceSettings<E extends AnyEvent = AnyEvent> {
  stream: string;
  subjectPrefix: string;
  registry: EventRegistry<E>;
}

/** A message as a reader holds it: a consumer's message or one got by sequence. */
export interface RawMessage {
  seq: number;
  subject: string;
  data: Uint8Array;
  headers: MsgHdrs | undefined;
}

export const rawOf = (stored: StoredMsg): RawMessage => ({ seq: stored.seq, subject: stored.subject, data: stored.data, headers: stored.header });

export interface CheckedCommit<E extends AnyEvent = AnyEvent> {
  seq: number;
  aggregate: string;
  link: ChainLink;
  /** the events, when it verifies and reads */
  events?: StoredEvent<E>[];
  /** why it does not, otherwise: every reason, the chain's and the decoder's */
  problem?: string;
  /** the decoder's error, when it did not read */
  cause?: unknown;
}

/**
 * A reader is held at `seq`: the error every finite read throws there (exit 7 on the CLI). When
 * the commit failed to decode, the decoder's code and details (field, type, schema version) stay.
 */
export const heldError = (seq: number, aggregate: string, problem: string, cause?: unknown): MeshError => {
  const message = `the log holds readers at seq ${seq} (${aggregate}): ${problem}. Nothing after it is read until an operator, having looked at it, voids it: mesh log void ${seq} --reason "…"`;
  if (cause instanceof MeshError) return new MeshError(cause.code, message, { field: 'commit', ...cause.details, seq, aggregate, problem }, { cause });
  return new CorruptEventError(message, { seq, field: 'commit', aggregate, problem });
};

/** The sequence and reason a reader is held at, when `error` is what a read throws at a commit it cannot take. */
export const heldAt = (error: unknown): { seq: number; aggregate: string; problem: string } | undefined => {
  if (!(error instanceof MeshError) || (error.code !== 'corrupt_event' && error.code !== 'unknown_event')) return undefined;
  const { seq, aggregate, problem } = error.details;
  if (typeof seq !== 'number') return undefined;
  return { seq, aggregate: typeof aggregate === 'string' ? aggregate : 'unknown', problem: typeof problem === 'string' ? problem : error.message };
};

/** Nobody asked to be told: it still reaches stderr (not as a node warning, which can be turned off), so nothing is passed silently. */
export const warnPassed = (passed: PassedCommit): void => void process.stderr.write(`mesh: ${passedLine(passed)}\n`);

export const passedLine = (passed: PassedCommit): string =>
  `passing seq ${passed.seq} (${passed.aggregate}) by: voided at seq ${passed.voidSeq} by ${passed.actor} ("${passed.reason}"); it ${passed.problem.startsWith('log message') ? `was unreadable: ${passed.problem}` : `did not verify: ${passed.problem}`}`;

/** How many commits a reader of the whole log holds back, at most, for one signature to answer for them. */
const STRETCH = 512;

interface Held<E extends AnyEvent> {
  message: RawMessage;
  link: ChainLink;
  aggregate: string;
  linked: boolean;
  events?: StoredEvent<E>[];
  unread?: { why: string; cause: unknown };
}

/**
 * A reader of the whole log, checking commits in log order. Each link is checked as it comes; the
 * signatures when a stretch is decided — at the end of what is stored now, or every STRETCH
 * commits: from the last commit back, one signature that holds answers for every commit from its
 * `since` up to it, as long as their links are unbroken, and the others are checked one by one.
 * So catching up costs about one signature per stretch the writer wrote, and at the head one per
 * commit, as before.
 */
export class StretchCheck<E extends AnyEvent = AnyEvent> {
  private held: Held<E>[] = [];

  constructor(
    private readonly source: Pick<LogSourceSettings<E>, 'subjectPrefix' | 'registry'>,
    /** h of the commit before the first one pushed */
    private before: Uint8Array,
  ) {}

  /** The next message in log order. Returns the commits decided now, in order: none while it waits for a later signature, all with `decide`. */
  push(message: RawMessage, key: string | undefined, decide: boolean): CheckedCommit<E>[] {
    const link = linkOf(message);
    const aggregate = aggregateOf(this.source.subjectPrefix, message.subject);
    const item: Held<E> = { message, link, aggregate, linked: sameBytes(link.prev, this.before) };
    this.before = link.hash;
    try {
      item.events = decodeCommit(this.source.registry, message.seq, aggregate, message.data);
    } catch (error) {
      item.unread = { why: error instanceof Error ? error.message : String(error), cause: error };
    }
    this.held.push(item);
    return decide || this.held.length >= STRETCH ? this.decide(key) : [];
  }

  /** Decides every commit held back now. */
  flush(key: string | undefined): CheckedCommit<E>[] {
    return this.held.length > 0 ? this.decide(key) : [];
  }

  /** Goes on after a commit checked elsewhere (nothing may be held back): its hash is what the next one links to. */
  after(hash: Uint8Array): void {
    if (this.held.length > 0) throw new Error('a stretch cannot go on after a commit it did not decide while it holds others back');
    this.before = hash;
  }

  private decide(key: string | undefined): CheckedCommit<E>[] {
    const items = this.held;
    this.held = [];
    const signature = new Map<number, string | undefined>();
    // From the last back: a signature that holds answers for the commits down to its `since`; a
    // broken link ends what any later signature binds.
    let answeredFrom = Number.POSITIVE_INFINITY;
    for (let i = items.length - 1; i >= 0; i--) {
      const item = items[i] as Held<E>;
      if (!item.linked) {
        answeredFrom = Number.POSITIVE_INFINITY;
        continue;
      }
      if (item.link.seq >= answeredFrom) continue;
      const problem = signatureProblem(item.link, key);
      signature.set(i, problem);
      if (!problem) answeredFrom = Math.min(answeredFrom, item.link.since);
    }
    return items.map((item, i) => {
      const chained = [item.linked ? undefined : linkProblem(item.link), signature.get(i) ?? (item.linked ? undefined : signatureProblem(item.link, key))].filter((p): p is string => p !== undefined).join('; ');
      const base = { seq: item.message.seq, aggregate: item.aggregate, link: item.link };
      if (item.unread) return { ...base, problem: chained ? `${chained}; and ${item.unread.why}` : item.unread.why, cause: item.unread.cause };
      return chained ? { ...base, problem: chained } : { ...base, events: item.events ?? [] };
    });
  }
}

export class ChainReader<E extends AnyEvent = AnyEvent> {
  private root: string | undefined;
  private last: { seq: number; hash: Uint8Array } | undefined;
  private readonly voided = new Map<number, PassedCommit>();
  private voidsReadThrough = 0;
  private reading: Promise<void> | undefined;

  constructor(
    private readonly jsm: Promise<JetStreamManager>,
    private readonly js: JetStreamClient,
    private readonly source: LogSourceSettings<E>,
  ) {}

  /**
   * The key every commit must verify under: the one the first commit names and is signed with.
   * Unknown (undefined) while the log is empty, or when its first commit names none.
   */
  async rootKey(): Promise<string | undefined> {
    if (this.root) return this.root;
    const first = await this.get(1);
    if (!first) return undefined;
    const link = linkOf(first);
    if (!link.key || chainProblem(link, link.key, GENESIS_PREV)) return undefined;
    this.root = link.key;
    return this.root;
  }

  /** Remembers the hash of the commit a reader just took, so its next read links without a lookup. */
  remember(seq: number, hash: Uint8Array): void {
    if (!this.last || seq >= this.last.seq) this.last = { seq, hash };
  }

  /** h_seq: the hash a commit at seq + 1 must link to (the genesis link for 0). */
  async hashAt(seq: number): Promise<Uint8Array> {
    if (seq <= 0) return GENESIS_PREV;
    if (this.last?.seq === seq) return this.last.hash;
    const message = await this.get(seq);
    // Nothing can be deleted from the log; a missing message is itself a broken link.
    if (!message) return new Uint8Array(0);
    const hash = linkOf(message).hash;
    this.remember(seq, hash);
    return hash;
  }

  /**
   * Checks one message: its signature, its link when `before` (h of the commit before it) is
   * given, and that it decodes. Never throws for what the message holds.
   */
  check(message: RawMessage, key: string | undefined, before?: Uint8Array): CheckedCommit<E> {
    const link = linkOf(message);
    const aggregate = aggregateOf(this.source.subjectPrefix, message.subject);
    const chained = chainProblem(link, key, before);
    // Decoded even when it does not verify, so the reason names the field that is wrong too.
    try {
      const events = decodeCommit(this.source.registry, message.seq, aggregate, message.data);
      return chained ? { seq: message.seq, aggregate, link, problem: chained } : { seq: message.seq, aggregate, link, events };
    } catch (error) {
      const unread = error instanceof Error ? error.message : String(error);
      return { seq: message.seq, aggregate, link, problem: chained ? `${chained}; and ${unread}` : unread, cause: error };
    }
  }

  /** The void of `seq`, if an operator has recorded one (read again each time it is asked: voids arrive while a reader waits). */
  async voidOf(seq: number): Promise<PassedCommit | undefined> {
    await this.readVoids();
    return this.voided.get(seq);
  }

  /** Every void recorded so far, by the sequence it voids. */
  async voids(): Promise<ReadonlyMap<number, PassedCommit>> {
    await this.readVoids();
    return this.voided;
  }

  /** What the log holds at `seq`, as a reader of the whole log judges it. */
  async inspect(seq: number): Promise<CommitFinding> {
    const head = (await (await this.jsm).streams.info(this.source.stream)).state.last_seq;
    const message = seq >= 1 && seq <= head ? await this.get(seq) : null;
    if (!message) return { exists: false, seq, head };
    const key = await this.rootKey();
    const checked = this.check(message, key, await this.hashAt(seq - 1));
    const voided = checked.problem ? ((await this.voidOf(seq)) ?? null) : null;
    return { exists: true, seq, aggregate: checked.aggregate, problem: checked.problem ?? null, voided };
  }

  async get(seq: number): Promise<RawMessage | null> {
    const stored = await (await this.jsm).streams.getMessage(this.source.stream, { seq }).catch((error: unknown) => {
      // 10037: no message found at that sequence
      if ((error as { code?: number })?.code === 10037 || /no message found/i.test((error as Error)?.message ?? '')) return null;
      throw error;
    });
    return stored ? rawOf(stored) : null;
  }

  /**
   * Reads the voids recorded since the last look. A message under `void.>` that does not verify
   * as the writer's, or does not read, is no void: it is skipped here and holds the readers of the
   * whole log like any other.
   */
  private readVoids(): Promise<void> {
    // One look at a time for every reader sharing this chain (a projector's builds ask together).
    const reading = (this.reading ??= this.readVoidsNow().finally(() => {
      this.reading = undefined;
    }));
    return reading;
  }

  private async readVoidsNow(): Promise<void> {
    const filter = `${this.source.subjectPrefix}.${VOIDS_KIND}.>`;
    const jsm = await this.jsm;
    const last = await jsm.streams.getMessage(this.source.stream, { last_by_subj: filter }).catch(() => null);
    if (!last || last.seq <= this.voidsReadThrough) return;
    const key = await this.rootKey();
    const consumer = await this.js.consumers.get(this.source.stream, { filter_subjects: filter, deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: this.voidsReadThrough + 1 });
    const messages = await consumer.consume({ max_messages: 256 });
    try {
      // Never waited on for ever: a consumer that stops short of the last void is given up (the caller retries).
      for await (const delivery of deliveriesOf(messages, async () => last.seq, VOID_PATIENCE)) {
        if (delivery.kind !== 'message') continue;
        const message = delivery.message;
        if (message.seq > last.seq) break;
        const checked = this.check({ seq: message.seq, subject: message.subject, data: message.data, headers: message.headers }, key);
        for (const event of checked.events ?? []) {
          if (event.type !== LogVoided.type) continue;
          const data = LogVoided.schema.parse(event.data);
          if (!this.voided.has(data.seq)) {
            this.voided.set(data.seq, { seq: data.seq, aggregate: data.aggregate, problem: data.problem, reason: data.reason, voidSeq: message.seq, actor: event.actor });
          }
        }
        if (message.seq >= last.seq) break;
      }
    } finally {
      messages.stop();
    }
    this.voidsReadThrough = last.seq;
  }
}
