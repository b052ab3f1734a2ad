import type pg from 'pg';
import type { Logger } from 'pino';
import { ApplyFailure, applyCommits, BuildRetired, recordStall, type Applied } from './apply.js';
import { dropBuild, switchOver } from './builds.js';
import { passedLine, type PassedCommit } from '../adapters/eventlog/chain-reader.js';
import { UnreadableCommit, type CommitReader, type LogCommit } from './commit-reader.js';
import { buildLockKey, readBuild, type Build, type ProjectorSchemas, type Stall } from './control.js';
import { ProgressMeter, type ProgressListener } from './progress.js';
import type { ProjectionDefinition } from './projection.js';
import type { AnyEvent } from '../domain/events/envelope.js';
import { isConnectionFailure, LOCK_SPACE } from './sql.js';
import { ValidationError } from '../errors.js';

// Folds the log into one build. Exactly one process does so at a time: the one holding the
// build's session advisory lock, on the very connection its transactions run on (if that
// connection dies, the lock goes with it and a standby takes over). Commits are applied in
// batches while catching up and one by one once at the head; a shadow build that has caught up
// takes over serving. A commit that cannot be applied stops the build there — recorded as a stall,
// reported once, retried with backoff — and nothing after it is applied until it is. That includes
// a commit that does not verify as the log's writer's: each retry reads it again, and with it the
// voids, so an operator's void lets the build pass it (logged, and told to `onPassed`).

export interface RunnerSettings {
  /** Backoff between attempts after a failure (a stall, a lost server). */
  retry: { initialMs: number; maxMs: number };
  /** How often a standby tries for the lock another process holds. */
  standbyMs: number;
  /** Limits of one catching-up transaction. */
  batch: { maxCommits: number; maxEvents: number };
  /**
   * At the log's head, how long after one write the next waits for more commits to write with it.
   * The first commit after a quiet spell is written at once; while commits keep coming, each build
   * writes at most once per this many milliseconds, whatever the rate (0: every commit as it comes).
   */
  headWriteEveryMs: number;
}

export const DEFAULT_RUNNER_SETTINGS: RunnerSettings = {
  retry: { initialMs: 250, maxMs: 30_000 },
  standbyMs: 1_000,
  batch: { maxCommits: 10_000, maxEvents: 10_000 },
  headWriteEveryMs: 20,
};

/**
 * The runner's settings with the longest wait between attempts from MESH_PROJECTION_RETRY_MAX_MS
 * (default 30 s): a stalled build tries again at most that long after its last attempt, for as long
 * as it is stalled.
 */
export const runnerSettingsFromEnv = (env: NodeJS.ProcessEnv = process.env): RunnerSettings => {
  const raw = env.MESH_PROJECTION_RETRY_MAX_MS;
  if (raw === undefined) return DEFAULT_RUNNER_SETTINGS;
  const maxMs = Number(raw);
  if (!Number.isInteger(maxMs) || maxMs < 1 || maxMs > 3_600_000) {
    throw new ValidationError(`MESH_PROJECTION_RETRY_MAX_MS "${raw}" is not a whole number of milliseconds from 1 to 3600000 (an hour)`, { field: 'MESH_PROJECTION_RETRY_MAX_MS', value: raw });
  }
  return { ...DEFAULT_RUNNER_SETTINGS, retry: { initialMs: Math.min(DEFAULT_RUNNER_SETTINGS.retry.initialMs, maxMs), maxMs } };
};

/**
 * While catching up, the reader hands over commits it already holds without ever leaving the
 * microtask queue, so PostgreSQL's replies to the batch in flight would wait until its buffer ran
 * dry; every this many commits the runner lets I/O in, and the two keep working side by side.
 */
const COMMITS_BETWEEN_IO = 64;

/** The longest a build held at a commit of the log waits before it reads the voids again. */
const HELD_RETRY_MAX_MS = 10_000;

const letIoIn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** A stall as reported to `onStall`: once per build and sequence, however often it is retried. */
export type StallReport = Omit<Stall, 'since' | 'attempts' | 'nextAttemptAt'> & { buildId: number };

export interface RunnerDeps<E extends AnyEvent = AnyEvent> {
  pool: pg.Pool;
  connect: () => Promise<pg.Client>;
  reader: CommitReader<E>;
  schemas: ProjectorSchemas;
  projection: ProjectionDefinition<E>;
  logger: Logger;
  settings: RunnerSettings;
  onStall?: (stall: StallReport) => void;
  /** told once of each voided commit this build passes by */
  onPassed?: (passed: PassedCommit) => void;
  onProgress?: ProgressListener;
  /** For a one-off rebuild: return once the build serves and has caught up, or once another process made it serve. */
  untilServing?: boolean;
  /** Told once when another process holds the build's lock and this runner waits as a standby. */
  onStandby?: () => void;
}

const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });

export class BuildRunner<E extends AnyEvent = AnyEvent> {
  private client: pg.Client | undefined;
  private locked = false;
  private standingBy = false;
  private delay: number;
  private readonly logger: Logger;
  private readonly told = new Set<number>();

  constructor(
    private readonly deps: RunnerDeps<E>,
    private build: Build,
  ) {
    this.delay = deps.settings.retry.initialMs;
    this.logger = deps.logger.child({ projection: build.projection, version: build.version, build: build.id });
  }

  get id(): number {
    return this.build.id;
  }

  /** Runs until `signal` aborts (→ 'stopped') or another build takes over from this one (→ 'retired'). */
  async run(signal: AbortSignal): Promise<'stopped' | 'retired'> {
    try {
      while (!signal.aborted) {
        try {
          if (!(await this.holdLock())) {
            if (this.deps.untilServing) {
              const build = await readBuild(this.deps.pool, this.deps.schemas, this.build.id);
              if (!build || build.status === 'retired') return 'retired';
              if (build.status === 'serving') return 'stopped';
            }
            if (!this.standingBy) this.deps.onStandby?.();
            this.standingBy = true;
            await sleep(this.deps.settings.standbyMs, signal);
            continue;
          }
          const outcome = await this.fold(signal);
          if (outcome !== 'stopped' || this.deps.untilServing) return outcome;
        } catch (error) {
          if (error instanceof BuildRetired) return 'retired';
          // Saying so must not end the retrying: a stall that cannot be recorded (PostgreSQL away
          // again) is tried again like the commit itself.
          await this.onFailure(error).catch((failure: unknown) => {
            this.logger.warn({ err: failure, retryInMs: this.delay }, 'could not record why the projection stopped; retrying');
            if (isConnectionFailure(failure)) return this.release();
            return undefined;
          });
          await sleep(this.delay, signal);
          // Held at a commit of the log, the build waits for an operator's void: it looks again at
          // least as often as the log's other readers do.
          this.delay = Math.min(this.delay * 2, this.deps.settings.retry.maxMs, error instanceof UnreadableCommit ? HELD_RETRY_MAX_MS : Number.POSITIVE_INFINITY);
        }
      }
      return 'stopped';
    } finally {
      await this.release();
    }
  }

  private async holdLock(): Promise<boolean> {
    if (this.locked && this.client) return true;
    if (!this.client) {
      const client = await this.deps.connect();
      client.on('error', () => undefined); // surfaced by the next query instead
      this.client = client;
    }
    const { rows } = await this.client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS locked', [LOCK_SPACE, buildLockKey(this.deps.schemas, this.build.id)]);
    this.locked = rows[0]?.locked === true;
    if (this.locked) this.logger.info({ status: this.build.status, checkpoint: this.build.checkpoint }, 'folding the log into this build');
    return this.locked;
  }

  private async release(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.locked = false;
    await client?.end().catch(() => undefined);
  }

  private async fold(signal: AbortSignal): Promise<'stopped' | 'retired'> {
    const client = this.client as pg.Client;
    const build = await readBuild(client, this.deps.schemas, this.build.id);
    if (!build || build.status === 'retired') return 'retired';
    this.build = build;
    const head = await this.deps.reader.head();
    if (build.status === 'building' && build.checkpoint >= head.seq) await this.trySwitch(head.seq);
    if (this.deps.untilServing && this.build.status === 'serving' && build.checkpoint >= head.seq) return 'stopped';
    const meter = new ProgressMeter(build.projection, build.version, build.checkpoint, head.seq, this.logger, this.deps.onProgress);

    // While one batch is being written, the next is read and decoded: PostgreSQL and this
    // process work at the same time. At most one batch is in flight, and batches commit in order.
    const { maxCommits, maxEvents } = this.deps.settings.batch;
    let inFlight: { done: Promise<Applied>; last: LogCommit<E> } | undefined;
    const settle = async (): Promise<void> => {
      if (!inFlight) return;
      const { done, last } = inFlight;
      inFlight = undefined;
      const applied = await done;
      this.delay = this.deps.settings.retry.initialMs;
      meter.advance(applied.checkpoint, applied.events, last.seq + last.pending);
    };
    let batch: LogCommit<E>[] = [];
    let events = 0;
    let sinceIo = 0;
    // The reader stops with this fold, whatever ends it: a read may be waiting while a write fails.
    const reading = new AbortController();
    const stopReading = (): void => reading.abort();
    signal.addEventListener('abort', stopReading, { once: true });
    // Stopped while the build was being read: the event has fired already, and would be missed.
    if (signal.aborted) stopReading();
    const commits = this.deps.reader.commits(build.checkpoint + 1, reading.signal)[Symbol.asyncIterator]();
    let coming = commits.next();
    // At the head, a batch held open until this time (performance.now()) for more commits to join it.
    let holdUntil: number | undefined;
    let wroteAtHead = -Infinity;
    const writeAtHead = async (last: LogCommit<E>): Promise<'stopped' | undefined> => {
      await settle();
      inFlight = { done: this.flush(client, batch), last };
      batch = [];
      events = 0;
      holdUntil = undefined;
      await settle();
      wroteAtHead = performance.now();
      if (this.build.status === 'building') await this.trySwitch(last.seq);
      if (this.deps.untilServing && this.build.status === 'serving') return 'stopped';
      return undefined;
    };
    try {
      for (;;) {
        if (holdUntil !== undefined) {
          const wait = holdUntil - performance.now();
          const arrived = wait > 0 && (await Promise.race([coming.then(() => true), sleep(wait, signal).then(() => false)]));
          if (!arrived) {
            if (signal.aborted) break;
            if ((await writeAtHead(batch.at(-1) as LogCommit<E>)) === 'stopped') return 'stopped';
            continue;
          }
        }
        const result = await coming;
        if (result.done) break;
        coming = commits.next();
        const commit = result.value;
        if (++sinceIo === COMMITS_BETWEEN_IO) {
          sinceIo = 0;
          await letIoIn();
        }
        if (commit.passed && !this.told.has(commit.seq)) {
          this.told.add(commit.seq);
          this.logger.warn({ seq: commit.seq, voidSeq: commit.passed.voidSeq, by: commit.passed.actor, reason: commit.passed.reason }, passedLine(commit.passed));
          this.deps.onPassed?.(commit.passed);
        }
        batch.push(commit);
        events += commit.events.length;
        // More is on its way: keep the batch open. The server's count is a hint; `idle` (nothing
        // followed for a while) writes what was read whatever the count says.
        const more = commit.pending > 0 && !commit.idle;
        const full = batch.length >= maxCommits || events >= maxEvents;
        if (more && !full) continue;
        if (more) {
          await settle();
          const done = this.flush(client, batch);
          done.catch(() => undefined); // awaited by settle(); this only keeps it from being reported as unhandled meanwhile
          inFlight = { done, last: commit };
          batch = [];
          events = 0;
          holdUntil = undefined;
          continue;
        }
        // At the head, or idle: written now when the last write at the head is a while ago, so a
        // quiet log's events are visible one by one; held open a moment for more when commits keep
        // coming, so a busy log costs each build a write per moment rather than one per commit.
        const due = wroteAtHead + this.deps.settings.headWriteEveryMs;
        if (!full && performance.now() < due) {
          holdUntil = due;
          continue;
        }
        if ((await writeAtHead(commit)) === 'stopped') return 'stopped';
      }
      await settle();
    } catch (error) {
      // A commit that cannot be read stops the build at it, not at the start of its batch: what was
      // read before it goes in first, so the stall's checkpoint is the sequence just before.
      if (error instanceof UnreadableCommit && batch.length > 0) {
        await settle();
        const last = batch[batch.length - 1] as LogCommit<E>;
        inFlight = { done: this.flush(client, batch), last };
        await settle();
      }
      throw error;
    } finally {
      await inFlight?.done.catch(() => undefined);
      signal.removeEventListener('abort', stopReading);
      reading.abort();
      coming.catch(() => undefined);
    }
    return 'stopped';
  }

  /** One transaction for the batch; if it fails, one per commit, so those before the culprit go in and the culprit is named. */
  private async flush(client: pg.Client, batch: LogCommit<E>[]): Promise<Applied> {
    try {
      return await applyCommits(client, this.deps.schemas, this.build, this.deps.projection, batch);
    } catch (error) {
      if (batch.length === 1 || error instanceof BuildRetired || isConnectionFailure(error)) throw error;
      let last: Applied = { commits: 0, events: 0, checkpoint: this.build.checkpoint };
      let events = 0;
      for (const commit of batch) {
        last = await applyCommits(client, this.deps.schemas, this.build, this.deps.projection, [commit]);
        events += last.events;
      }
      return { ...last, events };
    }
  }

  private async trySwitch(headSeq: number): Promise<void> {
    const { switched, retired } = await switchOver(this.deps.pool, this.deps.schemas, this.build.id, headSeq);
    if (!switched) return;
    this.build = { ...this.build, status: 'serving' };
    this.logger.info({ replaced: retired ? { version: retired.version, build: retired.id } : null, seq: headSeq }, 'build took over serving');
    if (retired) await dropBuild(this.deps.pool, this.deps.schemas, retired);
  }

  private async onFailure(error: unknown): Promise<void> {
    if (error instanceof ApplyFailure || error instanceof UnreadableCommit) {
      const stall =
        error instanceof ApplyFailure
          ? { seq: error.seq, type: error.type, sqlstate: error.sqlstate, message: (error.cause as Error)?.message ?? error.message }
          : { seq: error.seq, type: String(error.reason.details.type ?? 'unreadable commit'), sqlstate: undefined, message: error.message };
      const first = await recordStall(this.deps.pool, this.deps.schemas, this.build.id, stall, this.delay);
      const report: StallReport = {
        buildId: this.build.id,
        projection: this.build.projection,
        version: this.build.version,
        seq: stall.seq,
        type: stall.type,
        ...(stall.sqlstate ? { sqlstate: stall.sqlstate } : {}),
        error: stall.message,
      };
      if (first) {
        this.logger.error({ seq: stall.seq, type: stall.type, sqlstate: stall.sqlstate, err: stall.message }, 'projection stalled: it cannot apply this commit and will not go past it');
        this.deps.onStall?.(report);
      } else {
        this.logger.warn({ seq: stall.seq, sqlstate: stall.sqlstate, retryInMs: this.delay }, 'projection still stalled; trying again');
      }
      return;
    }
    this.logger.warn({ err: error, retryInMs: this.delay }, 'projection interrupted; retrying');
    if (isConnectionFailure(error)) await this.release();
  }
}
