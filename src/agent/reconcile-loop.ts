import type { Logger } from 'pino';

// Events only enqueue work: a new declaration, a process that exited, a step that ended, the
// resync timer all just mark the node dirty. One pass runs at a time and passes repeat while
// anything was marked during one; a pass reads the newest desired state, never an event's payload.

export class ReconcileLoop {
  private dirty = false;
  private running: Promise<void> | undefined;

  constructor(
    private readonly pass: () => Promise<void>,
    private readonly logger: Logger,
  ) {}

  wake(reason: string): void {
    this.logger.debug({ reason }, 'reconcile');
    this.dirty = true;
    this.kick();
  }

  /** Resolves when no pass is running or due. */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  private kick(): void {
    if (this.running) return;
    this.running = (async () => {
      while (this.dirty) {
        this.dirty = false;
        try {
          await this.pass();
        } catch (error) {
          this.logger.error({ err: error }, 'reconcile pass failed; the next resync tries again');
        }
      }
    })().finally(() => {
      this.running = undefined;
      if (this.dirty) this.kick();
    });
  }
}
