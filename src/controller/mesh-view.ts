import type { Logger } from 'pino';
import type { EventLog } from '../adapters/eventlog/event-log.js';
import { heldAt, passedLine } from '../adapters/eventlog/chain-reader.js';
import type { MeshEvent, StoredMeshEvent } from '../domain/registry.js';
import { emptyMeshState, evolveMesh, type MeshState } from '../domain/mesh/state.js';
import type { LogHold, MeshReader } from './mesh-service.js';
import { FoldSnapshotWriter, type SnapshotSchedule } from './fold-snapshot-writer.js';
import type { FoldSnapshots, FoldStart } from './fold-snapshots.js';

// The controller process's one view of the mesh: one follower of the log, one fold. Every part of
// the process reads it — the command service deciding, the declarations derived, the builds
// coordinated, the facts stated, the page — as controller-runtime's components share one cache.
// Nothing but the follower changes it: a part that appends waits until the follower has folded
// its commit, so what it decides next is judged on the log, never on its own copy of its writes.
// A commit that does not verify or read holds the fold there (said once), and the view says so to
// every reader until an operator's void lets it pass.
//
// With snapshots, the view starts from the newest snapshot of its fold that passes every check
// and follows the log from the sequence after it (fold-snapshots.ts), and keeps one as it folds
// (fold-snapshot-writer.ts).

/**
 * What was folded: the events, or the sequence an operator's void let the view pass, or the whole
 * fold again (after a commit this process folded before the log acknowledged it was not stored).
 */
export type ViewChange = { kind: 'event'; event: StoredMeshEvent } | { kind: 'passed'; seq: number } | { kind: 'rebuilt'; seq: number };

/** How many commits the fold takes while catching up before it lets timers and I/O in. */
const COMMITS_BETWEEN_IO = 512;

export interface MeshViewOptions {
  logger: Logger;
  /** told once per sequence the fold is held at */
  onHeld?: (hold: LogHold) => void;
  /** where the view starts from and keeps the snapshots of its fold, and how often it writes one */
  snapshots?: { keeper: FoldSnapshots; schedule: SnapshotSchedule };
}

export class MeshView implements MeshReader {
  private readonly state: MeshState = emptyMeshState();
  private readonly abort = new AbortController();
  /** the follower now running: aborted on stop, or to fold the log again */
  private following = new AbortController();
  private running: Promise<void> | undefined;
  /**
   * Commits this process's writer folded as it issued them, before the log acknowledged them
   * (mesh-writer.ts), by sequence: the follower passes over each when the log delivers it, having
   * checked it is that commit. Until then the state holds them, and `whenSettled` waits.
   */
  private readonly own = new Map<number, string>();
  private settleWaiters: (() => void)[] = [];
  /** the own commit whose events the follower is passing over */
  private passingOwn = 0;
  private rebuilding: Promise<void> | undefined;
  private settling = false;
  private caughtUpWaiters: (() => void)[] = [];
  private hold: LogHold | undefined;
  private caughtUp = false;
  /** the last sequence the follower took (folded or passed) */
  private followedTo = 0;
  private readonly listeners: ((change: ViewChange, caughtUp: boolean) => void)[] = [];
  private waiters: { seq: number; resolve: () => void }[] = [];
  private waking = false;
  private startPoint: FoldStart | undefined;
  private readonly snapshotWriter: FoldSnapshotWriter | undefined;

  constructor(
    private readonly log: EventLog<MeshEvent>,
    private readonly options: MeshViewOptions,
  ) {
    const snapshots = options.snapshots;
    this.snapshotWriter = snapshots ? new FoldSnapshotWriter(this, snapshots.keeper, { ...snapshots.schedule, logger: options.logger }) : undefined;
  }

  /** Starts following the log (from the newest snapshot that holds, when it keeps them); the view is current once it has caught up (`atHead`). */
  start(): void {
    this.running ??= this.startFromSnapshot(this.state).then(() => {
      this.followedTo = this.state.seq;
      this.wake();
      return this.follow();
    });
    this.snapshotWriter?.start();
  }

  /** Stops following; with snapshots, writes one of where the fold stopped (when it moved since the last). */
  async stop(): Promise<void> {
    this.abort.abort();
    this.following.abort();
    await this.running?.catch(() => undefined);
    for (const waiter of this.waiters) waiter.resolve();
    this.waiters = [];
    for (const resolve of this.caughtUpWaiters.splice(0)) resolve();
    for (const run of this.settleWaiters.splice(0)) run();
    await this.snapshotWriter?.stop();
  }

  /** Where the fold started: a snapshot at its sequence, or seq 0 and why not (undefined until it has looked). */
  startedFrom(): FoldStart | undefined {
    return this.startPoint;
  }

  /** The mesh as folded so far. Read it; never change it. */
  mesh(): MeshState {
    return this.state;
  }

  /** The commit the fold is held at, if any. */
  held(): LogHold | undefined {
    return this.hold;
  }

  /** Whether the follower has read everything the log held when it started. */
  isCaughtUp(): boolean {
    return this.caughtUp;
  }

  /** Resolves once the follower has caught up with the log as it was when it started (at once after). */
  whenCaughtUp(): Promise<void> {
    if (this.caughtUp || this.abort.signal.aborted) return Promise.resolve();
    return new Promise((resolve) => this.caughtUpWaiters.push(resolve));
  }

  /** Told of every change, in log order, with whether the view had caught up by then. */
  onChange(listener: (change: ViewChange, caughtUp: boolean) => void): void {
    this.listeners.push(listener);
  }

  /** The mesh at the log's head as it is now, or up to the commit the fold is held at. */
  async atHead(): Promise<{ state: MeshState; held?: LogHold }> {
    await this.reached(await this.log.headSeq());
    return this.hold ? { state: this.state, held: this.hold } : { state: this.state };
  }

  /** The mesh as folded, once the follower has caught up: what this process wrote is in it already. */
  async known(): Promise<{ state: MeshState; held?: LogHold }> {
    await this.whenCaughtUp();
    return this.hold ? { state: this.state, held: this.hold } : { state: this.state };
  }

  /** Resolves once the fold has taken `seq` (or is held before it, or stopped). */
  reached(seq: number): Promise<void> {
    if (this.followedTo >= seq || (this.hold && this.hold.seq <= seq) || this.abort.signal.aborted) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ seq, resolve }));
  }

  /** A commit this process appended: the follower folds it like any other, and the caller waits for that. */
  appended(seq: number): Promise<void> {
    return this.reached(seq);
  }

  /**
   * Folds a commit this process's writer has just issued (its events as the log will hold them),
   * before the log acknowledges it: the next command is decided after it without waiting a round
   * trip. If the log does not store it, the writer has the view fold the log again (`rebuild`).
   */
  foldOwn(events: readonly StoredMeshEvent[]): void {
    const first = events[0];
    if (!first) return;
    this.own.set(first.seq, first.commandId);
    for (const event of events) evolveMesh(this.state, event);
  }

  /** Whether every commit the state holds is one the log has delivered. */
  isSettled(): boolean {
    return this.own.size === 0;
  }

  /**
   * Runs `read` on the state at a moment it holds only what the log has delivered — no commit of
   * this process still unacknowledged — so what it derives (a declaration) never rests on a commit
   * the log may not store. Runs at once when that is so now, else as the follower confirms the last.
   */
  whenSettled<T>(read: () => T): Promise<T> {
    if (this.abort.signal.aborted) return Promise.resolve(read());
    const settled = new Promise<T>((resolve, reject) =>
      this.settleWaiters.push(() => {
        try {
          resolve(read());
        } catch (error) {
          reject(error instanceof Error ? error : new Error(String(error)));
        }
      }),
    );
    this.settle();
    return settled;
  }

  /** Whether something waits for the state to settle: the writer lets it, before deciding more. */
  settleWanted(): boolean {
    return this.settleWaiters.length > 0;
  }

  /**
   * Folds the log again from the start, off to the side, and puts the result in place of the
   * state: what this process's writer folded ahead of the log is gone, and what the log holds is
   * there. The writer calls it, with nothing in flight, after the log refused or did not answer a
   * commit it had folded. Readers meanwhile read the state as it was.
   */
  rebuild(): Promise<void> {
    this.rebuilding ??= this.foldAgain().finally(() => (this.rebuilding = undefined));
    return this.rebuilding;
  }

  private async foldAgain(): Promise<void> {
    this.following.abort();
    await this.running?.catch(() => undefined);
    // From the newest snapshot that holds (it is of a settled fold: only commits the log stored), else from seq 1.
    const fresh = emptyMeshState();
    await this.startFromSnapshot(fresh).catch(() => undefined);
    try {
      for await (const event of this.log.read({ fromSeq: fresh.seq + 1, onPassed: (passed) => (fresh.seq = Math.max(fresh.seq, passed.seq)) })) evolveMesh(fresh, event);
    } catch (error) {
      // Held at a commit: the state is the log up to it, and the follower says where, as at start.
      if (!heldAt(error)) this.options.logger.error({ err: error }, 'folding the log again stopped early; the follower goes on from where it got');
    }
    Object.assign(this.state, fresh);
    this.own.clear();
    this.passingOwn = 0;
    this.followedTo = fresh.seq;
    this.options.logger.warn({ seq: fresh.seq }, 'folded the log again: a commit this controller had decided on was not stored');
    this.tell({ kind: 'rebuilt', seq: fresh.seq });
    this.settle();
    if (this.abort.signal.aborted) return;
    this.following = new AbortController();
    this.running = this.follow();
  }

  /** Runs what waits for a settled state, in a task of its own (as `wake`: never on part of a commit), if the state is settled then. */
  private settle(): void {
    if (this.settleWaiters.length === 0 || this.settling) return;
    this.settling = true;
    setImmediate(() => {
      this.settling = false;
      if (!this.isSettled() && !this.abort.signal.aborted) return;
      for (const run of this.settleWaiters.splice(0)) run();
    });
  }

  /**
   * Waiters are woken in a task of their own, not as the follower hands over an event: a commit's
   * events are handed over one after another without leaving the microtask queue, and a waiter
   * woken at the first of them would read a fold holding only part of that commit (and decide on
   * it: an assignment without the seat it holds).
   */
  private wake(): void {
    if (this.waiters.length === 0 || this.waking) return;
    this.waking = true;
    setImmediate(() => {
      this.waking = false;
      this.wakeNow();
    });
  }

  private wakeNow(): void {
    const still: typeof this.waiters = [];
    for (const waiter of this.waiters) {
      if (this.followedTo >= waiter.seq || (this.hold && this.hold.seq <= waiter.seq)) waiter.resolve();
      else still.push(waiter);
    }
    this.waiters = still;
  }

  /**
   * Before following: the newest snapshot of the fold, taken when it passes every check
   * (fold-snapshots.ts), into `into` (at start, this view's state: the same object every reader
   * holds); the fold then goes on after its sequence. Otherwise it starts at seq 1, saying why.
   */
  private async startFromSnapshot(into: MeshState): Promise<void> {
    const keeper = this.options.snapshots?.keeper;
    if (!keeper) {
      this.startPoint = { seq: 0, snapshot: false, reason: 'this process keeps no snapshots of its fold' };
      return;
    }
    const loading = performance.now();
    const loaded = await keeper.load();
    this.startPoint = loaded.start;
    if ('state' in loaded) {
      Object.assign(into, loaded.state);
      this.options.logger.info(
        { seq: loaded.start.seq, snapshot: keeper.where, loadMs: Math.round(performance.now() - loading) },
        `starting from the snapshot of the fold at seq ${loaded.start.seq}; following the log from seq ${loaded.start.seq + 1}`,
      );
    } else {
      const line = `${loaded.start.reason ?? 'no snapshot'}; folding the log from seq 1`;
      if (loaded.ignored) this.options.logger.warn({ snapshot: keeper.where, reason: loaded.start.reason }, line);
      else this.options.logger.info({ snapshot: keeper.where }, line);
    }
  }

  private tell(change: ViewChange): void {
    for (const listener of this.listeners) listener(change, this.caughtUp);
  }

  private async follow(): Promise<void> {
    const logger = this.options.logger;
    const signal = this.following.signal;
    let sinceIo = 0;
    while (!signal.aborted) {
      try {
        for await (const item of this.log.follow({ fromSeq: this.followedTo + 1, signal })) {
          if (signal.aborted) return;
          switch (item.kind) {
            case 'caught-up':
              this.caughtUp = true;
              logger.info({ seq: item.seq }, 'caught up with the log');
              for (const resolve of this.caughtUpWaiters.splice(0)) resolve();
              this.tell({ kind: 'passed', seq: this.followedTo });
              break;
            case 'event': {
              // While catching up, the fold lets timers and I/O in now and then (the writer's lease
              // is renewed on time, the bus is answered) — at the start of a commit, never in one.
              if (!this.caughtUp && item.event.index === 0 && ++sinceIo >= COMMITS_BETWEEN_IO) {
                sinceIo = 0;
                await new Promise((resolve) => setImmediate(resolve));
                if (signal.aborted) return;
              }
              const seq = item.event.seq;
              const ownCommand = this.own.get(seq);
              if (ownCommand !== undefined && ownCommand !== item.event.commandId) {
                // Cannot be, while this process is the log's one writer: its own commit is not what the log holds there.
                logger.error({ seq, expected: ownCommand, found: item.event.commandId }, 'the log holds another commit where this controller folded its own; folding again');
                void this.rebuild();
                return;
              }
              if (ownCommand !== undefined) {
                this.own.delete(seq);
                this.passingOwn = seq;
              }
              // Its events were folded when it was issued: the log's copy is passed over.
              if (seq !== this.passingOwn) evolveMesh(this.state, item.event);
              this.followedTo = seq;
              this.tell({ kind: 'event', event: item.event });
              if (ownCommand !== undefined) this.settle();
              break;
            }
            case 'held':
              if (this.hold?.seq === item.seq) continue; // said once
              this.hold = { seq: item.seq, aggregate: item.aggregate, problem: item.problem, since: new Date() };
              logger.error(
                { seq: item.seq, aggregate: item.aggregate, problem: item.problem },
                `the log holds the controller at seq ${item.seq}: nothing after it is folded or declared until an operator voids it (mesh log void ${item.seq} --reason "…")`,
              );
              this.options.onHeld?.(this.hold);
              break;
            case 'passed':
              this.hold = undefined;
              this.followedTo = item.commit.seq;
              this.state.seq = Math.max(this.state.seq, item.commit.seq);
              logger.warn({ seq: item.commit.seq, voidSeq: item.commit.voidSeq, by: item.commit.actor, reason: item.commit.reason }, passedLine(item.commit));
              this.tell({ kind: 'passed', seq: item.commit.seq });
              break;
          }
          this.wake();
        }
      } catch (error) {
        // The bus or the stream went away under the follower: follow again from where the fold is.
        if (signal.aborted) return;
        logger.error({ err: error, seq: this.followedTo }, 'following the log failed; following again shortly');
        await new Promise((r) => setTimeout(r, 1_000));
      }
    }
  }
}
