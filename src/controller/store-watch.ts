import pg from 'pg';
import type { Logger } from 'pino';

// What the controller knows of its own store: whether PostgreSQL answers, and since when it has
// not. One `SELECT 1` every few seconds on a connection of its own, so "unreachable since T" is
// the time the outage began as the controller saw it, not the moment someone asked. The overview
// and `mesh status` name the outage from it instead of reading its absence as nodes never heard
// from or a controller that is not running.

export interface StoreHealth {
  store: 'PostgreSQL';
  /** the server's address, without a password */
  url: string;
  /** null until the first look */
  reachable: boolean | null;
  /** set while unreachable: since when (the first failed look after one that answered) */
  unreachableSince: string | null;
  /** why the last look failed */
  error: string | null;
  /** when it last looked */
  checkedAt: string | null;
}

export const DEFAULT_STORE_WATCH_MS = 2_000;

/** "PostgreSQL at URL is unreachable since T (why)" — the one way an outage of the store is said. */
export const unreachableLine = (health: Pick<StoreHealth, 'store' | 'url' | 'unreachableSince' | 'error'>): string =>
  `${health.store} at ${health.url} is unreachable since ${health.unreachableSince ?? 'an unknown time'}${health.error ? ` (${health.error})` : ''}`;

export class StoreWatch {
  private readonly pool: pg.Pool;
  private health: StoreHealth;
  private timer: NodeJS.Timeout | undefined;
  private looking: Promise<unknown> | undefined;
  private stopped = false;

  constructor(
    databaseUrl: string,
    private readonly options: { url: string; intervalMs?: number; logger: Logger; now?: () => Date },
  ) {
    this.pool = new pg.Pool({ connectionString: databaseUrl, max: 1, connectionTimeoutMillis: 5_000, statement_timeout: 5_000, query_timeout: 6_000 });
    this.pool.on('error', () => undefined); // the next look says so
    this.health = { store: 'PostgreSQL', url: options.url, reachable: null, unreachableSince: null, error: null, checkedAt: null };
  }

  start(): void {
    const tick = (): void => {
      this.looking = this.look().finally(() => {
        if (!this.stopped) this.timer = setTimeout(tick, this.options.intervalMs ?? DEFAULT_STORE_WATCH_MS);
      });
    };
    tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.looking;
    await this.pool.end().catch(() => undefined);
  }

  /** What is known now. */
  state(): StoreHealth {
    return { ...this.health };
  }

  /** Looks now (also what the timer does). */
  async look(): Promise<StoreHealth> {
    const now = (this.options.now ?? (() => new Date()))();
    try {
      await this.pool.query('SELECT 1');
      if (this.health.reachable === false) this.options.logger.info({ store: 'PostgreSQL', url: this.options.url, since: this.health.unreachableSince }, 'PostgreSQL answers again');
      this.health = { ...this.health, reachable: true, unreachableSince: null, error: null, checkedAt: now.toISOString() };
    } catch (error) {
      const message = (error as Error).message || String(error);
      if (this.health.reachable !== false) this.options.logger.warn({ store: 'PostgreSQL', url: this.options.url, err: message }, 'PostgreSQL is unreachable');
      this.health = { ...this.health, reachable: false, unreachableSince: this.health.unreachableSince ?? now.toISOString(), error: message, checkedAt: now.toISOString() };
    }
    return this.state();
  }
}
