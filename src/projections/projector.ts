import type { NatsConnection } from '@nats-io/nats-core';
import pg from 'pg';
import { pino, type Logger } from 'pino';
import { dropBuild, planBuilds } from './builds.js';
import type { PassedCommit } from '../adapters/eventlog/chain-reader.js';
import { CommitReader, type LogSource } from './commit-reader.js';
import { DEFAULT_SCHEMAS, ensureControlSchema, type Build, type ProjectorSchemas } from './control.js';
import type { ProgressListener } from './progress.js';
import type { ProjectionDefinition } from './projection.js';
import type { AnyEvent } from '../domain/events/envelope.js';
import { BuildRunner, DEFAULT_RUNNER_SETTINGS, type RunnerSettings, type StallReport } from './runner.js';

// The projector: every projection of the catalogue folded into PostgreSQL, each independently (a
// stalled one holds up no other). It plans each projection's builds now and then — so a rebuild
// requested from another process, or a build another controller gave up, is picked up — and runs
// one runner per build. It reads the log and never writes it: a stall goes to `onStall`, and the
// controller decides what to record.

export interface ProjectorOptions<E extends AnyEvent = AnyEvent> {
  databaseUrl: string;
  nc: NatsConnection;
  log: LogSource<E>;
  projections: readonly ProjectionDefinition<E>[];
  schemas?: ProjectorSchemas;
  logger?: Logger;
  onStall?: (stall: StallReport) => void;
  onPassed?: (passed: PassedCommit) => void;
  onProgress?: ProgressListener;
  /** How often builds are planned again (a requested rebuild, a version another process created). */
  planIntervalMs?: number;
  settings?: Partial<RunnerSettings>;
  /** the reader of the log, when not one made from `nc` and `log` */
  reader?: CommitReader<E>;
}

/** A connection of a runner's own: it holds the build's session lock, so it is never pooled. */
/**
 * Limits on every connection the projector makes, so a build that cannot get a connection or a
 * lock errs, is logged and retried, instead of waiting silently for ever: no statement of a batch
 * takes a minute, and no lock the projector needs is held that long by anyone well.
 */
export const PROJECTOR_CONNECTION_LIMITS = { connectionTimeoutMillis: 15_000, lock_timeout: 30_000, statement_timeout: 120_000, keepAlive: true } as const;

export const connectClient = async (databaseUrl: string): Promise<pg.Client> => {
  const client = new pg.Client({ connectionString: databaseUrl, ...PROJECTOR_CONNECTION_LIMITS });
  await client.connect();
  return client;
};

export class Projector<E extends AnyEvent = AnyEvent> {
  private readonly pool: pg.Pool;
  private readonly schemas: ProjectorSchemas;
  private readonly logger: Logger;
  private readonly reader: CommitReader<E>;
  private readonly settings: RunnerSettings;
  private readonly runners = new Map<number, Promise<unknown>>();
  private readonly warned = new Set<string>();
  private readonly abort = new AbortController();
  private planning: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: ProjectorOptions<E>) {
    this.pool = new pg.Pool({ connectionString: options.databaseUrl, max: 4, ...PROJECTOR_CONNECTION_LIMITS });
    this.pool.on('error', () => undefined); // an idle client's failure; the next checkout reports it
    this.schemas = options.schemas ?? DEFAULT_SCHEMAS;
    this.logger = (options.logger ?? pino({ level: 'silent' })).child({ component: 'projector' });
    this.reader = options.reader ?? new CommitReader(options.nc, options.log);
    this.settings = { ...DEFAULT_RUNNER_SETTINGS, ...options.settings };
  }

  /** Creates what the engine needs in PostgreSQL, plans every projection once and starts folding. */
  async start(): Promise<void> {
    await ensureControlSchema(this.pool, this.schemas);
    await this.plan();
    const every = this.options.planIntervalMs ?? 5_000;
    const tick = (): void => {
      this.timer = setTimeout(() => {
        this.planning = this.plan()
          .catch((error: unknown) => this.logger.warn({ err: error }, 'planning projection builds failed; retrying'))
          .finally(() => {
            if (!this.abort.signal.aborted) tick();
          });
      }, every);
    };
    tick();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    clearTimeout(this.timer);
    await this.planning;
    await Promise.allSettled([...this.runners.values()]);
    await this.pool.end();
  }

  private async plan(): Promise<void> {
    for (const projection of this.options.projections) {
      if (this.abort.signal.aborted) return;
      const plan = await planBuilds(this.pool, this.schemas, projection);
      for (const retired of plan.retired) await dropBuild(this.pool, this.schemas, retired);
      if (plan.newerServing && !this.warned.has(projection.name)) {
        this.warned.add(projection.name);
        this.logger.warn(
          { projection: projection.name, codeVersion: projection.version, servingVersion: plan.newerServing.version },
          'the database serves a newer version of this projection than this code; leaving it to the newer controller',
        );
      }
      for (const build of plan.builds) this.startRunner(projection, build);
    }
  }

  private startRunner(projection: ProjectionDefinition<E>, build: Build): void {
    if (this.runners.has(build.id) || this.abort.signal.aborted) return;
    const runner = new BuildRunner(
      {
        pool: this.pool,
        connect: () => connectClient(this.options.databaseUrl),
        reader: this.reader,
        schemas: this.schemas,
        projection,
        logger: this.logger,
        settings: this.settings,
        ...(this.options.onStall ? { onStall: this.options.onStall } : {}),
        ...(this.options.onPassed ? { onPassed: this.options.onPassed } : {}),
        ...(this.options.onProgress ? { onProgress: this.options.onProgress } : {}),
      },
      build,
    );
    const running = runner
      .run(this.abort.signal)
      .catch((error: unknown) => this.logger.error({ err: error, build: build.id }, 'projection runner failed'))
      .finally(() => this.runners.delete(build.id));
    this.runners.set(build.id, running);
  }
}

export const startProjector = async <E extends AnyEvent>(options: ProjectorOptions<E>): Promise<Projector<E>> => {
  const projector = new Projector(options);
  await projector.start();
  return projector;
};
