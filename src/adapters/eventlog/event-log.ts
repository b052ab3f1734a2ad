import type { AnyEvent, CommandMetadata, ProposedEvent, StoredEvent } from '../../domain/events/envelope.js';
import type { SignedCommand } from '../../domain/operators/signed-command.js';
import type { CommitFinding, PassedCommit } from './chain-reader.js';

export type { CommitFinding, PassedCommit } from './chain-reader.js';

// The port every part of the control plane writes and reads the mesh's history through. `E`: the
// events its registry decodes (the mesh's: MeshEvent), so a reader switching on `type` reads typed
// data. What it appends is checked against the registry when appended, whatever its type says.

export interface AppendResult<E extends AnyEvent = AnyEvent> {
  aggregate: string;
  /** The aggregate's version before the append (what the command was decided against). */
  expectedVersion: number;
  /** The aggregate's version after its events. */
  version: number;
  /** The LOG sequence of the commit. */
  seq: number;
  /** True when this command had been appended before: the original outcome is returned, nothing is added. */
  duplicate: boolean;
  events: StoredEvent<E>[];
}

export interface AggregateHistory<E extends AnyEvent = AnyEvent> {
  aggregate: string;
  version: number;
  events: StoredEvent<E>[];
}

export interface ReadOptions {
  /** The first LOG sequence to read (1 when absent). */
  fromSeq?: number;
  /** An aggregate, or a subject pattern under the log prefix: `seat` (every seat), `seat.*`, `assignment.alpha.>`. */
  aggregate?: string;
  /** Told of every commit passed by because an operator voided it (else the log's own `onPassed`). */
  onPassed?: (passed: PassedCommit) => void;
}

export type FollowItem<E extends AnyEvent = AnyEvent> =
  | { kind: 'event'; event: StoredEvent<E> }
  /** Everything stored when the follower started has been delivered; what follows is live. */
  | { kind: 'caught-up'; seq: number }
  /**
   * The commit at `seq` does not verify or does not read: the follower stops there, told once,
   * and waits (reading the voids again on a backoff) until an operator voids it.
   */
  | { kind: 'held'; seq: number; aggregate: string; problem: string }
  /** A commit an operator voided, passed by: the follower says so. */
  | { kind: 'passed'; commit: PassedCommit };

export interface AppendOptions {
  /**
   * Also require the whole log to end at this sequence: the command was decided against the mesh
   * as of that sequence and must not land if anything was appended since (Nats-Expected-Last-Sequence).
   */
  expectedLogSeq?: number;
  /** the operator's signed command that decided these events: kept with them, for audit */
  signed?: SignedCommand;
}

/** What the server answered a pipelined append: stored, or not (the log did not end where it was decided; or the command id was stored before). */
export type IssuedOutcome<E extends AnyEvent = AnyEvent> = { kind: 'stored'; append: AppendResult<E> } | { kind: 'conflict' | 'duplicate'; seq: number | undefined };

export interface IssuedAppend<E extends AnyEvent = AnyEvent> {
  /** the events as the log will hold them, once sent; undefined when nothing was sent */
  issued: Promise<StoredEvent<E>[] | undefined>;
  result: Promise<IssuedOutcome<E>>;
}

export interface EventLog<E extends AnyEvent = AnyEvent> {
  /**
   * Appends the events one command decided, atomically, only if the aggregate is still at
   * `expectedVersion` (0: it has no events yet). A retry of the same command id returns the
   * original outcome and appends nothing.
   */
  append(aggregate: string, events: readonly ProposedEvent[], expectedVersion: number, metadata: CommandMetadata, options?: AppendOptions): Promise<AppendResult<E>>;
  /** A mesh command's append issued behind the ones still in flight, when the log can (JetStreamEventLog with a writer). */
  issueAppend?(aggregate: string, events: readonly ProposedEvent[], expectedVersion: number, metadata: CommandMetadata, options: AppendOptions & { expectedLogSeq: number }): IssuedAppend<E>;
  readAggregate(aggregate: string, options?: Pick<ReadOptions, 'onPassed'>): Promise<AggregateHistory<E>>;
  /**
   * Every event stored now from `fromSeq`, in log order; ends at the head as it was when called.
   * Throws at a commit that does not verify or read (unless voided), naming its sequence.
   */
  read(options?: ReadOptions): AsyncIterable<StoredEvent<E>>;
  /** Catch up from `fromSeq`, say so, then tail: no gap and no duplicate at the seam, across reconnects. */
  follow(options?: ReadOptions & { signal?: AbortSignal }): AsyncIterable<FollowItem<E>>;
  /** The LOG sequence of the newest commit (0 when empty). */
  headSeq(): Promise<number>;
  /** What the log holds at `seq`, judged as a reader of the whole log judges it. */
  inspect(seq: number): Promise<CommitFinding>;
  /** Every void recorded, by the sequence it voids. */
  voids(): Promise<ReadonlyMap<number, PassedCommit>>;
  /** The key every commit must verify under, as the log's first commit names it (undefined: empty, or it names none). */
  writerKey(): Promise<string | undefined>;
  /**
   * The hash of the commit at `seq` (its chain link h_seq, chain.ts), hex, from the message as
   * stored now; undefined when the log holds none there. It binds every commit up to it.
   */
  commitDigest(seq: number): Promise<string | undefined>;
}
