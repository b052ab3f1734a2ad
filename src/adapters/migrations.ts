import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Pool } from 'pg';
import { inTransaction } from './pool-client.js';
import { projectRoot } from '../config.js';
import { LOCK_SPACE, lockKey } from '../projections/sql.js';

// Versioned SQL of a schema that is not rebuilt from the log (the projector's control tables, the
// controller's own): `migrations/<folder>/NNN_*.sql`, each applied once, in name order, recorded in
// the schema's own `schema_migrations`.

const quoted = (name: string): string => `"${name.replaceAll('"', '""')}"`;

/**
 * Creates `schema` (and `alsoCreate`, schemas others fill) and applies the files of
 * `migrations/<folder>` it has not recorded yet, in one transaction; safe to run concurrently.
 */
export const migrateSchema = async (pool: Pool, options: { schema: string; folder: string; alsoCreate?: readonly string[] }, root = join(projectRoot, 'migrations')): Promise<void> => {
  await inTransaction(pool, async (client) => {
    // One migrating process at a time: the others find the files recorded when they get the lock.
    await client.query('SELECT pg_advisory_xact_lock($1, $2)', [LOCK_SPACE, lockKey(`${options.schema}:migrate`)]);
    for (const schema of [options.schema, ...(options.alsoCreate ?? [])]) await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoted(schema)}`);
    await client.query(`SET LOCAL search_path TO ${quoted(options.schema)}`);
    await client.query('CREATE TABLE IF NOT EXISTS schema_migrations (file text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())');
    const applied = new Set((await client.query<{ file: string }>('SELECT file FROM schema_migrations')).rows.map((r) => r.file));
    for (const file of readdirSync(join(root, options.folder)).filter((f) => f.endsWith('.sql')).sort()) {
      if (applied.has(file)) continue;
      await client.query(readFileSync(join(root, options.folder, file), 'utf8'));
      await client.query('INSERT INTO schema_migrations (file) VALUES ($1)', [file]);
    }
  });
};
