import type { ClientBase, Pool } from 'pg';
import { migrateSchema } from '../adapters/migrations.js';
import type { ProjectionSchema } from './projection.js';
import { ident, LOCK_SPACE, lockKey } from './sql.js';

// The engine's bookkeeping in PostgreSQL: its control schema (the `builds` table), the read schema
// whose views are what readers query, and one schema per build.
//
// A build is a projection at one version and generation. Readers never name a build: they query
// `<read schema>.<table>`, a view on the serving build's table, and a switch replaces those views in
// the same transaction that marks the new build serving.

export interface ProjectorSchemas {
  /** The engine's tables and the prefix of every build schema (default `projector`). */
  control: string;
  /** Where readers find the projections' tables, as views (default `mesh`). */
  read: string;
}

export const DEFAULT_SCHEMAS: ProjectorSchemas = { control: 'projector', read: 'mesh' };

/** The schemas from MESH_PROJECTOR_SCHEMA and MESH_READ_SCHEMA, else the defaults: two meshes can share one database. */
export const schemasFromEnv = (env: NodeJS.ProcessEnv = process.env): ProjectorSchemas => ({
  control: env.MESH_PROJECTOR_SCHEMA ?? DEFAULT_SCHEMAS.control,
  read: env.MESH_READ_SCHEMA ?? DEFAULT_SCHEMAS.read,
});

export type BuildStatus = 'building' | 'serving' | 'retired';

export interface Build {
  id: number;
  projection: string;
  version: number;
  generation: number;
  schemaName: string;
  status: BuildStatus;
  tables: string[];
  checkpoint: number;
  checkpointTime: Date | null;
  eventsApplied: number;
  createdAt: Date;
  /** when the row last changed: the checkpoint moved, a stall was recorded, the status changed */
  updatedAt: Date;
  servingSince: Date | null;
  stall: Stall | null;
}

/** A projection stopped at a commit it cannot apply. */
export interface Stall {
  projection: string;
  version: number;
  seq: number;
  type: string;
  /** PostgreSQL's SQLSTATE when the database refused (42703, 23505…); absent for other failures. */
  sqlstate?: string;
  error: string;
  since: Date;
  attempts: number;
  /** when the next attempt is due (null: not known, e.g. recorded by an older process) */
  nextAttemptAt: Date | null;
}

export interface BuildRow {
  id: string;
  projection: string;
  version: number;
  generation: number;
  schema_name: string;
  status: BuildStatus;
  tables: string[];
  checkpoint: string;
  checkpoint_time: Date | null;
  events_applied: string;
  created_at: Date;
  updated_at: Date;
  serving_since: Date | null;
  stalled_seq: string | null;
  stalled_type: string | null;
  stalled_sqlstate: string | null;
  stalled_error: string | null;
  stalled_since: Date | null;
  stall_attempts: number;
  stall_next_at: Date | null;
}

export const toBuild = (row: BuildRow): Build => ({
  id: Number(row.id),
  projection: row.projection,
  version: row.version,
  generation: row.generation,
  schemaName: row.schema_name,
  status: row.status,
  tables: row.tables,
  checkpoint: Number(row.checkpoint),
  checkpointTime: row.checkpoint_time,
  eventsApplied: Number(row.events_applied),
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  servingSince: row.serving_since,
  stall:
    row.stalled_seq === null
      ? null
      : {
          projection: row.projection,
          version: row.version,
          seq: Number(row.stalled_seq),
          type: row.stalled_type ?? '',
          ...(row.stalled_sqlstate ? { sqlstate: row.stalled_sqlstate } : {}),
          error: row.stalled_error ?? '',
          since: row.stalled_since ?? new Date(0),
          attempts: row.stall_attempts,
          nextAttemptAt: row.stall_next_at ?? null,
        },
});

export const buildsTable = (schemas: ProjectorSchemas): string => `${ident(schemas.control)}.builds`;

/** NOTIFY channel on which every commit of a build announces its new checkpoint. */
export const progressChannel = (schemas: ProjectorSchemas): string => `${schemas.control}_progress`;

export const buildSchemaName = (schemas: ProjectorSchemas, projection: string, version: number, generation: number): string => {
  const name = `${schemas.control}_${projection}_v${version}_${generation}`;
  ident(name);
  return name;
};

/** Serialises the decisions about one projection's builds (planning, switching) across processes. */
export const lockProjectionXact = async (client: ClientBase, schemas: ProjectorSchemas, projection: string): Promise<void> => {
  await client.query('SELECT pg_advisory_xact_lock($1, $2)', [LOCK_SPACE, lockKey(`${schemas.control}:plan:${projection}`)]);
};

/** The key of the session lock a build's one builder holds. */
export const buildLockKey = (schemas: ProjectorSchemas, buildId: number): number => lockKey(`${schemas.control}:build:${buildId}`);

/** Creates the control and read schemas and applies the engine's own migrations once each; safe to run concurrently. */
export const ensureControlSchema = async (pool: Pool, schemas: ProjectorSchemas): Promise<void> => {
  // Names the engine builds every statement from: refused here, before anything is created.
  ident(schemas.control);
  ident(schemas.read);
  await migrateSchema(pool, { schema: schemas.control, folder: 'projector', alsoCreate: [schemas.read] });
};

/** Whether the projector has made its control tables yet (it has not, before its first start). */
export const controlTablesMade = async (db: Pool | ClientBase, schemas: ProjectorSchemas): Promise<boolean> =>
  Boolean((await db.query<{ found: string | null }>('SELECT to_regclass($1) AS found', [buildsTable(schemas)])).rows[0]?.found);

export const listBuilds = async (db: Pool | ClientBase, schemas: ProjectorSchemas, projection?: string): Promise<Build[]> => {
  const { rows } = await db.query<BuildRow>(
    `SELECT * FROM ${buildsTable(schemas)} WHERE $1::text IS NULL OR projection = $1 ORDER BY projection, status DESC, version, generation`,
    [projection ?? null],
  );
  return rows.map(toBuild);
};

export const readBuild = async (db: Pool | ClientBase, schemas: ProjectorSchemas, id: number, forUpdate = false): Promise<Build | undefined> => {
  const { rows } = await db.query<BuildRow>(`SELECT * FROM ${buildsTable(schemas)} WHERE id = $1${forUpdate ? ' FOR UPDATE' : ''}`, [id]);
  return rows[0] ? toBuild(rows[0]) : undefined;
};

/**
 * A new build of `projection` at its code's version, in a schema of its own, created with its
 * tables (inside the caller's transaction). The first build of a projection serves at once, so
 * readers find its views from the start; any later one is a shadow until it has caught up.
 */
export const createBuild = async (client: ClientBase, schemas: ProjectorSchemas, projection: ProjectionSchema, status: 'building' | 'serving'): Promise<Build> => {
  const table = buildsTable(schemas);
  const { rows: gen } = await client.query<{ next: number }>(`SELECT coalesce(max(generation), 0) + 1 AS next FROM ${table} WHERE projection = $1 AND version = $2`, [
    projection.name,
    projection.version,
  ]);
  const generation = gen[0]?.next ?? 1;
  const schemaName = buildSchemaName(schemas, projection.name, projection.version, generation);
  // A schema left behind by a build whose row was dropped is not ours to keep.
  await client.query(`DROP SCHEMA IF EXISTS ${ident(schemaName)} CASCADE`);
  await client.query(`CREATE SCHEMA ${ident(schemaName)}`);
  await client.query(`SET LOCAL search_path TO ${ident(schemaName)}`);
  await client.query(projection.schemaSql);
  await client.query('SET LOCAL search_path TO DEFAULT');
  const { rows: tables } = await client.query<{ tablename: string }>('SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY tablename', [schemaName]);
  const { rows } = await client.query<BuildRow>(
    `INSERT INTO ${table} (projection, version, generation, schema_name, status, tables, serving_since)
     VALUES ($1, $2, $3, $4, $5, $6, CASE WHEN $5 = 'serving' THEN now() END) RETURNING *`,
    [projection.name, projection.version, generation, schemaName, status, tables.map((t) => t.tablename)],
  );
  const build = toBuild(rows[0] as BuildRow);
  if (status === 'serving') await pointViews(client, schemas, [], build);
  return build;
};

/** Replaces the read views of `retired` tables with views of `serving`'s, inside the caller's transaction. */
export const pointViews = async (client: ClientBase, schemas: ProjectorSchemas, retired: readonly string[], serving: Build): Promise<void> => {
  for (const table of new Set([...retired, ...serving.tables])) {
    await client.query(`DROP VIEW IF EXISTS ${ident(schemas.read)}.${ident(table)}`);
  }
  for (const table of serving.tables) {
    await client.query(`CREATE VIEW ${ident(schemas.read)}.${ident(table)} AS SELECT * FROM ${ident(serving.schemaName)}.${ident(table)}`);
  }
};

/** The sequences serving builds of `projections` are stalled at, up to `upTo`, lowest first. */
export const stalledSequences = async (db: Pool | ClientBase, schemas: ProjectorSchemas, projections: readonly string[], upTo: number): Promise<number[]> => {
  const { rows } = await db.query<{ stalled_seq: string }>(
    `SELECT DISTINCT stalled_seq FROM ${buildsTable(schemas)} WHERE status = 'serving' AND projection = ANY($1) AND stalled_seq IS NOT NULL AND stalled_seq <= $2 ORDER BY stalled_seq`,
    [projections, upTo],
  );
  return rows.map((row) => Number(row.stalled_seq));
};
