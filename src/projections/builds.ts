import type { Pool } from 'pg';
import { inTransaction } from '../adapters/pool-client.js';
import { buildsTable, createBuild, listBuilds, lockProjectionXact, pointViews, progressChannel, readBuild, type Build, type ProjectorSchemas } from './control.js';
import type { ProjectionSchema } from './projection.js';
import { ident } from './sql.js';

// Which builds of a projection exist and which one serves. Every decision here runs under the
// projection's transaction-level advisory lock, so two controller processes agree on one build
// per version instead of racing to create two.

export interface Plan {
  /** The builds this code can fold: the serving one if it is at the code's version, and any shadow at it. */
  builds: Build[];
  /** Set when the database serves a newer version than this code: it builds nothing and leaves it be. */
  newerServing?: Build;
  /** Builds retired by a switch whose schema was not dropped yet (the switching process died). */
  retired: Build[];
}


const byStatus = (builds: Build[], projection: ProjectionSchema) => ({
  serving: builds.find((b) => b.status === 'serving'),
  building: builds.find((b) => b.status === 'building' && b.version === projection.version),
});

/**
 * The builds to run for `projection` as this code defines it: the first build serves at once; a
 * code version above the serving one gets a shadow build (created here if none exists yet); a
 * code version below it builds nothing — an older process must not undo an upgrade (a forced
 * rebuild can, on purpose).
 */
export const planBuilds = (pool: Pool, schemas: ProjectorSchemas, projection: ProjectionSchema): Promise<Plan> =>
  inTransaction(pool, async (client) => {
    await lockProjectionXact(client, schemas, projection.name);
    const all = await listBuilds(client, schemas, projection.name);
    const retired = all.filter((b) => b.status === 'retired');
    const { serving, building } = byStatus(all, projection);
    if (!serving) return { builds: [building ?? (await createBuild(client, schemas, projection, 'serving'))], retired };
    if (serving.version === projection.version) return { builds: building ? [serving, building] : [serving], retired };
    if (serving.version > projection.version && !building) return { builds: [], newerServing: serving, retired };
    return { builds: [building ?? (await createBuild(client, schemas, projection, 'building'))], retired };
  });

/** A shadow build of `projection` at this code's version from sequence 1 — the one in progress, if there is one. */
export const requestRebuild = (pool: Pool, schemas: ProjectorSchemas, projection: ProjectionSchema): Promise<Build> =>
  inTransaction(pool, async (client) => {
    await lockProjectionXact(client, schemas, projection.name);
    const { serving, building } = byStatus(await listBuilds(client, schemas, projection.name), projection);
    return building ?? (await createBuild(client, schemas, projection, serving ? 'building' : 'serving'));
  });

/**
 * Makes `buildId` the serving build of its projection in one transaction — the build rows and
 * the read views together — if it is at least as far as the log head it was given and as the
 * build it replaces. Readers blocked on a view while it is replaced resolve the name again when
 * the transaction commits, so they read the new build, never a missing table or an empty one.
 * Returns the retired build (to drop), or undefined when it is not time yet.
 */
export const switchOver = (pool: Pool, schemas: ProjectorSchemas, buildId: number, headSeq: number): Promise<{ retired?: Build; switched: boolean }> =>
  inTransaction(pool, async (client) => {
    const mine = await readBuild(client, schemas, buildId);
    if (!mine || mine.status !== 'building') return { switched: false };
    await lockProjectionXact(client, schemas, mine.projection);
    const { rows } = await client.query<{ id: string }>(`SELECT id FROM ${buildsTable(schemas)} WHERE projection = $1 AND status = 'serving' FOR UPDATE`, [mine.projection]);
    const old = rows[0] ? await readBuild(client, schemas, Number(rows[0].id)) : undefined;
    const me = await readBuild(client, schemas, buildId, true);
    if (!me || me.status !== 'building' || me.checkpoint < headSeq || (old && me.checkpoint < old.checkpoint)) return { switched: false };
    if (old) await client.query(`UPDATE ${buildsTable(schemas)} SET status = 'retired', updated_at = now() WHERE id = $1`, [old.id]);
    await client.query(`UPDATE ${buildsTable(schemas)} SET status = 'serving', serving_since = now(), updated_at = now() WHERE id = $1`, [me.id]);
    await pointViews(client, schemas, old?.tables ?? [], me);
    await client.query('SELECT pg_notify($1, $2)', [progressChannel(schemas), JSON.stringify({ projection: me.projection, build: me.id, status: 'serving', seq: me.checkpoint })]);
    return old ? { retired: old, switched: true } : { switched: true };
  });

/** Drops a retired build's schema and row, after the switch: readers already query its successor. */
export const dropBuild = async (pool: Pool, schemas: ProjectorSchemas, build: Build): Promise<void> => {
  await inTransaction(pool, async (client) => {
    await lockProjectionXact(client, schemas, build.projection);
    await client.query(`DROP SCHEMA IF EXISTS ${ident(build.schemaName)} CASCADE`);
    await client.query(`DELETE FROM ${buildsTable(schemas)} WHERE id = $1 AND status = 'retired'`, [build.id]);
  });
};
