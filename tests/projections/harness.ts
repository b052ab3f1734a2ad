import { afterAll, beforeAll } from '@jest/globals';
import pg from 'pg';
import { pino } from 'pino';
import type { AnyEvent } from '../../src/domain/events/envelope.js';
import type { EventRegistry } from '../../src/domain/events/registry.js';
import { meshEventRegistry, type MeshEvent } from '../../src/domain/registry.js';
import { ident } from '../../src/projections/sql.js';
import { controlTablesMade, listBuilds, type Build, type ProjectorSchemas } from '../../src/projections/control.js';
import { Projector, type ProjectorOptions } from '../../src/projections/projector.js';
import type { NatsConnection } from '@nats-io/nats-core';
import { meshProjections } from '../../src/projections/catalogue.js';
import { meta, openTestLog, type TestLog } from '../helpers/log.js';
import { uniqueName } from '../helpers/names.js';
import { testRegistry } from '../helpers/test-events.js';
import { testDatabaseUrl } from '../helpers/database.js';

// What the projection tests share: schemas of their own per test, a projector over a test log
// with short retry and planning intervals, and ways to wait for it and to read what it built.

export { testDatabaseUrl };

export const freshSchemas = (): ProjectorSchemas => {
  const name = uniqueName('p');
  return { control: `${name}_ctl`, read: `${name}_read` };
};

export const FAST = { retry: { initialMs: 50, maxMs: 400 }, standbyMs: 100 } as const;

type TestProjectorOptions<E extends AnyEvent> = Omit<ProjectorOptions<E>, 'databaseUrl' | 'nc' | 'log'> & { schemas: ProjectorSchemas };

/** A started projector over `testLog`, reading it with the test events' registry. */
export const startTestProjector = (testLog: TestLog, options: TestProjectorOptions<AnyEvent>): Promise<Projector> => startProjectorReading(testLog, testRegistry(), options);

/** A started projector over `testLog`, reading it as a mesh's log. */
export const startMeshTestProjector = (testLog: TestLog, options: TestProjectorOptions<MeshEvent>): Promise<Projector<MeshEvent>> =>
  startProjectorReading(testLog, meshEventRegistry(), options);

const startProjectorReading = async <E extends AnyEvent>(testLog: TestLog, registry: EventRegistry<E>, options: TestProjectorOptions<E>): Promise<Projector<E>> => {
  const projector = new Projector<E>({
    databaseUrl: testDatabaseUrl(),
    nc: testLog.nc,
    log: { stream: testLog.settings.stream, subjectPrefix: testLog.settings.subjectPrefix, registry },
    planIntervalMs: 200,
    logger: pino({ level: process.env.MESH_TEST_LOG ?? 'silent' }),
    ...options,
    settings: { ...FAST, ...options.settings },
  });
  await projector.start();
  return projector;
};

export const openPool = (): pg.Pool => {
  const pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 4 });
  pool.on('error', () => undefined);
  return pool;
};

/** A test log and a pool for the tests of the calling describe block: opened before them, closed after them. */
export const useLogAndPool = (): { readonly testLog: TestLog; readonly pool: pg.Pool } => {
  const shared = {} as { testLog: TestLog; pool: pg.Pool };
  beforeAll(async () => {
    shared.testLog = await openTestLog();
    shared.pool = openPool();
  });
  afterAll(async () => {
    await shared.testLog.close();
    await shared.pool.end();
  });
  return shared;
};

/** Polls the build rows (a test's own observation, not the engine's wake-up path) until `check` holds. */
export const eventually = async <T>(what: string, probe: () => Promise<T>, check: (value: T) => boolean, timeoutMs = 30_000): Promise<T> => {
  const deadline = Date.now() + timeoutMs;
  let value = await probe();
  while (!check(value)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 50));
    value = await probe();
  }
  return value;
};

/** The build serving `projection`; none while the projector has not made its control tables yet (a controller still starting). */
export const servingBuild = async (pool: pg.Pool, schemas: ProjectorSchemas, projection: string): Promise<Build | undefined> =>
  (await controlTablesMade(pool, schemas)) ? (await listBuilds(pool, schemas, projection)).find((b) => b.status === 'serving') : undefined;

export const waitServingAt = (pool: pg.Pool, schemas: ProjectorSchemas, projection: string, seq: number, timeoutMs?: number): Promise<Build | undefined> =>
  eventually(`${projection} to serve seq ${seq}`, () => servingBuild(pool, schemas, projection), (b) => (b?.checkpoint ?? 0) >= seq, timeoutMs);

export const rowsOf = async (pool: pg.Pool, schema: string, table: string, orderBy: string): Promise<Record<string, unknown>[]> =>
  (await pool.query(`SELECT * FROM ${ident(schema)}.${ident(table)} ORDER BY ${orderBy}`)).rows;

export const dropSchemas = async (pool: pg.Pool, schemas: ProjectorSchemas): Promise<void> => {
  const { rows } = await pool.query<{ nspname: string }>(`SELECT nspname FROM pg_namespace WHERE nspname = $1 OR nspname = $2 OR nspname LIKE $3`, [
    schemas.control,
    schemas.read,
    `${schemas.control}\\_%`,
  ]);
  for (const row of rows) await pool.query(`DROP SCHEMA IF EXISTS ${ident(row.nspname)} CASCADE`);
};

/** `count` single-event commits spread over `aggregates` aggregates, `window` appends in flight. */
export const appendMany = async (
  testLog: TestLog,
  count: number,
  event: (i: number) => { type: string; data: unknown },
  options: { aggregates?: number; window?: number; prefix?: string } = {},
): Promise<number> => {
  const aggregates = options.aggregates ?? 200;
  const prefix = options.prefix ?? uniqueName('a');
  const versions = new Array<number>(aggregates).fill(0);
  let next = 0;
  let last = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      const i = next++;
      const a = i % aggregates;
      // Each aggregate's appends go in order; different aggregates interleave.
      while (versions[a] !== Math.floor(i / aggregates)) await new Promise((r) => setImmediate(r));
      const result = await testLog.log.append(`item.${prefix}-${a}`, [event(i)], versions[a] as number, meta(`${prefix}-${i}`));
      versions[a] = result.version;
      last = Math.max(last, result.seq);
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.window ?? 64, count) }, worker));
  return last;
};

/**
 * Every table of every mesh projection as `schemas` serve it, and the same folded from sequence 1
 * by a projector of its own into fresh schemas (a rebuild), both read up to `headSeq`: a test
 * expects the two equal. The rebuild's schemas are dropped afterwards.
 */
export const besideARebuild = async (
  pool: pg.Pool,
  options: { databaseUrl: string; nc: NatsConnection; log: { stream: string; subjectPrefix: string }; schemas: ProjectorSchemas; headSeq: number },
): Promise<{ built: Record<string, unknown[]>; rebuilt: Record<string, unknown[]> }> => {
  const scratch = freshSchemas();
  const projector = new Projector<MeshEvent>({
    databaseUrl: options.databaseUrl,
    nc: options.nc,
    log: { ...options.log, registry: meshEventRegistry() },
    projections: meshProjections(),
    schemas: scratch,
    planIntervalMs: 500,
    logger: pino({ level: process.env.MESH_TEST_LOG ?? 'silent' }),
    settings: FAST,
  });
  await projector.start();
  try {
    for (const projection of meshProjections()) await waitServingAt(pool, scratch, projection.name, options.headSeq, 120_000);
    const read = async (schemas: ProjectorSchemas): Promise<Record<string, unknown[]>> => {
      const tables: Record<string, unknown[]> = {};
      for (const build of (await listBuilds(pool, schemas)).filter((b) => b.status === 'serving')) {
        for (const table of build.tables) tables[`${build.projection}.${table}`] = (await pool.query(`SELECT * FROM ${ident(schemas.read)}.${ident(table)} t ORDER BY t::text`)).rows;
      }
      return tables;
    };
    return { built: await read(options.schemas), rebuilt: await read(scratch) };
  } finally {
    await projector.stop();
    await dropSchemas(pool, scratch);
  }
};
