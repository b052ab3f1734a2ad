import type { Subscriber } from 'pg-listen';
import type { Pool } from 'pg';
import { UnavailableError } from '../errors.js';
import { buildsTable, progressChannel, type ProjectorSchemas } from './control.js';

// Reads that see the writes: a command's reply carries the LOG sequence it appended, and a query
// can first wait until the projections it reads have reached it. Every commit of a serving build
// NOTIFYs its new checkpoint (delivered when it commits), so waiters are woken, not polling.
// A read whose projections are there already (the usual case) answers from one query: the LISTEN
// connection, and pg-listen with the copy of pg it loads, are opened only for a wait.

interface Waiter {
  projections: readonly string[];
  seq: number;
  resolve: () => void;
}

interface Progress {
  projection: string;
  status: string;
  seq: number;
}

export class ReadBarrier {
  private readonly reached = new Map<string, number>();
  private readonly waiters = new Set<Waiter>();
  /** the LISTEN connection, once a wait needed it */
  private listening: Promise<Subscriber> | undefined;

  private constructor(
    private readonly databaseUrl: string,
    private readonly pool: Pool,
    private readonly schemas: ProjectorSchemas,
  ) {}

  /** A barrier reading through `pool`; it refuses now if PostgreSQL does not let the pool in. */
  static async open(databaseUrl: string, pool: Pool, schemas: ProjectorSchemas): Promise<ReadBarrier> {
    await pool.query('SELECT 1');
    return new ReadBarrier(databaseUrl, pool, schemas);
  }

  /** One LISTEN connection for every waiter of this process, opened by the first that waits. */
  private listen(): Promise<Subscriber> {
    this.listening ??= (async () => {
      // pg-listen is CommonJS with its function on `exports.default`.
      const { default: pgListen } = await import('pg-listen');
      const subscriber = pgListen.default({ connectionString: this.databaseUrl }, { paranoidChecking: false });
      subscriber.events.on('error', () => undefined); // pg-listen reconnects; waiters time out meanwhile
      subscriber.notifications.on(progressChannel(this.schemas), (payload: Progress) => this.onProgress(payload));
      await subscriber.connect();
      await subscriber.listenTo(progressChannel(this.schemas));
      return subscriber;
    })();
    return this.listening;
  }

  /**
   * Resolves once every one of `projections` serves a build whose checkpoint is at `seq` or
   * beyond. Refuses after `timeoutMs`, naming how far each one got and any stall holding it.
   */
  async waitFor(projections: readonly string[], seq: number, timeoutMs: number): Promise<void> {
    await this.refresh(projections);
    if (projections.every((p) => (this.reached.get(p) ?? 0) >= seq)) return;
    let waiter: Waiter | undefined;
    const reached = new Promise<void>((resolve) => {
      waiter = { projections, seq, resolve };
      this.waiters.add(waiter);
    });
    let timer: NodeJS.Timeout | undefined;
    try {
      // Listening before reading again: a commit between the read and the wait still wakes us.
      await this.listen();
      await this.refresh(projections);
      this.wake();
      const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
      if ((await Promise.race([reached, timedOut])) === 'timeout') throw await this.refusal(projections, seq, timeoutMs);
    } finally {
      clearTimeout(timer);
      if (waiter) this.waiters.delete(waiter);
    }
  }

  async close(): Promise<void> {
    for (const waiter of this.waiters) waiter.resolve();
    const subscriber = await this.listening?.catch(() => undefined);
    await subscriber?.close();
  }

  private onProgress(progress: Progress): void {
    if (progress.status !== 'serving') return;
    this.reached.set(progress.projection, Math.max(this.reached.get(progress.projection) ?? 0, progress.seq));
    this.wake();
  }

  private wake(): void {
    for (const waiter of this.waiters) {
      if (waiter.projections.every((p) => (this.reached.get(p) ?? 0) >= waiter.seq)) {
        this.waiters.delete(waiter);
        waiter.resolve();
      }
    }
  }

  private async refresh(projections: readonly string[]): Promise<void> {
    const { rows } = await this.pool.query<{ projection: string; checkpoint: string }>(
      `SELECT projection, checkpoint FROM ${buildsTable(this.schemas)} WHERE status = 'serving' AND projection = ANY($1)`,
      [projections],
    );
    for (const row of rows) this.reached.set(row.projection, Math.max(this.reached.get(row.projection) ?? 0, Number(row.checkpoint)));
  }

  private async refusal(projections: readonly string[], seq: number, timeoutMs: number): Promise<UnavailableError> {
    const { rows } = await this.pool.query<{ projection: string; checkpoint: string; stalled_seq: string | null; stalled_sqlstate: string | null; stalled_error: string | null }>(
      `SELECT projection, checkpoint, stalled_seq, stalled_sqlstate, stalled_error FROM ${buildsTable(this.schemas)} WHERE status = 'serving' AND projection = ANY($1)`,
      [projections],
    );
    const behind = projections
      .map((p) => ({ p, row: rows.find((r) => r.projection === p) }))
      .filter(({ row }) => !row || Number(row.checkpoint) < seq)
      .map(({ p, row }) => {
        if (!row) return `${p} is not built yet`;
        const stall = row.stalled_seq ? `, stalled at seq ${row.stalled_seq}${row.stalled_sqlstate ? ` (SQLSTATE ${row.stalled_sqlstate})` : ''}: ${row.stalled_error}` : '';
        return `${p} is at seq ${row.checkpoint}${stall}`;
      });
    return new UnavailableError(`projections have not reached seq ${seq} after ${timeoutMs} ms: ${behind.join('; ') || 'they have now'}`, { seq, timeoutMs, projections });
  }
}
