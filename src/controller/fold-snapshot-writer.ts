import type { Logger } from 'pino';
import type { MeshState } from '../domain/mesh/state.js';
import type { FoldSnapshots, FoldStart } from './fold-snapshots.js';
import type { LogHold } from './mesh-service.js';

// Keeps a snapshot of a followed fold as the log grows: after every `everyEvents` events folded,
// and every `everySeconds` when anything was folded since the last — only while the fold is
// caught up with the log and not held at a commit, so a snapshot is of a fold that is the log's.
// One more is written when the fold stops cleanly.
//
// Encoding is synchronous (the state cannot change under it) and is done in a task of its own
// (setImmediate), never inside the follower's delivery of a commit: a commit's events are handed
// over one after another without leaving the microtask queue, so a task runs only between whole
// commits. Storing the bytes is asynchronous and does not hold the fold up. One write at a time.

export interface SnapshotSchedule {
  /** write one after this many events folded (when caught up) */
  everyEvents: number;
  /** and after this many seconds when anything was folded since the last */
  everySeconds: number;
}

/** What the writer reads of the view it keeps snapshots of. */
export interface FollowedFold {
  mesh(): MeshState;
  held(): LogHold | undefined;
  isCaughtUp(): boolean;
  startedFrom(): FoldStart | undefined;
  onChange(listener: (change: { kind: 'event' | 'passed' | 'rebuilt' }, caughtUp: boolean) => void): void;
  /** runs `read` at a moment the fold holds only what the log has stored (mesh-view.ts) */
  whenSettled?<T>(read: () => T): Promise<T>;
}

export class FoldSnapshotWriter {
  /** events folded since the last snapshot written (or since the start) */
  private events = 0;
  /** the sequence of the last snapshot written */
  private written = 0;
  private writing: Promise<void> | undefined;
  private due = false;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly view: FollowedFold,
    private readonly snapshots: FoldSnapshots,
    private readonly options: SnapshotSchedule & { logger: Logger },
  ) {}

  start(): void {
    this.view.onChange((change, caughtUp) => {
      if (change.kind === 'event') this.events++;
      if (caughtUp && this.events >= this.options.everyEvents) this.schedule();
    });
    this.timer = setInterval(() => {
      if (this.moved()) this.schedule();
    }, this.options.everySeconds * 1_000);
    this.timer.unref();
  }

  /** After the fold has stopped: the last writes finish, and one more is written if the fold moved since. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.writing;
    if (this.moved()) await this.write();
  }

  /** Whether the fold is past the last snapshot written, or the one it started from. */
  private moved(): boolean {
    return this.view.mesh().seq > Math.max(this.written, this.view.startedFrom()?.seq ?? 0);
  }

  private schedule(): void {
    if (this.due || this.stopped) return;
    this.due = true;
    setImmediate(() => {
      this.due = false;
      if (this.writing || this.stopped) return;
      this.writing = this.write().finally(() => {
        this.writing = undefined;
      });
    });
  }

  private async write(): Promise<void> {
    if (!this.view.isCaughtUp() || this.view.held() || !this.moved()) return;
    const events = this.events;
    this.events = 0;
    try {
      // Of the fold as the log has it: never with a commit of this process's writer still in flight.
      const save = () => this.snapshots.save(this.view.mesh());
      const written = await (this.view.whenSettled ? this.view.whenSettled(save) : save());
      if (written) this.written = written.seq;
      if (written) this.options.logger.info({ ...written, snapshot: this.snapshots.where }, `snapshot of the fold at seq ${written.seq} written (${written.bytes} bytes; encoding took ${written.encodeMs} ms)`);
    } catch (error) {
      // Tried again at the next event or tick: what was folded still counts.
      this.events += events;
      this.options.logger.warn({ err: error, snapshot: this.snapshots.where }, 'writing a snapshot of the fold failed; trying again later');
    }
  }
}
