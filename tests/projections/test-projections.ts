import { defineProjection, type ProjectionDefinition } from '../../src/projections/projection.js';

// Projections that exist only for the engine's tests. `entries` has no unique key on purpose: an
// event applied twice shows up as a second row instead of a constraint error.

export const ledger = (options: { name?: string; version?: number; onApply?: () => void } = {}): ProjectionDefinition => {
  const version = options.version ?? 1;
  // Version 2 adds a column and fills it, so a reader can tell which version it sees.
  const extra = version >= 2 ? ', written_by integer NOT NULL' : '';
  return defineProjection({
    name: options.name ?? 'ledger',
    version,
    schemaSql: `CREATE TABLE entries (seq bigint NOT NULL, event_index integer NOT NULL, type text NOT NULL, aggregate text NOT NULL, n integer, text text${extra});
                CREATE TABLE totals (aggregate text PRIMARY KEY, events integer NOT NULL, sum bigint NOT NULL);`,
    handlers: Object.fromEntries(
      ['test.counted', 'test.noted', 'test.renamed'].map((type) => [
        type,
        async (event, tx) => {
          options.onApply?.();
          const data = event.data as { n?: number; text?: string; first?: string };
          const columns = `seq, event_index, type, aggregate, n, text${version >= 2 ? ', written_by' : ''}`;
          const values = [event.seq, event.index, event.type, event.aggregate, data.n ?? null, data.text ?? data.first ?? null, ...(version >= 2 ? [version] : [])];
          await tx.client.query(`INSERT INTO ${tx.table('entries')} (${columns}) VALUES (${values.map((_, i) => `$${i + 1}`).join(', ')})`, values);
          await tx.client.query(
            `INSERT INTO ${tx.table('totals')} AS t (aggregate, events, sum) VALUES ($1, 1, $2)
             ON CONFLICT (aggregate) DO UPDATE SET events = t.events + 1, sum = t.sum + EXCLUDED.sum`,
            [event.aggregate, data.n ?? 0],
          );
        },
      ]),
    ),
  });
};

/** Writes a column its v1 schema lacks when a note arrives: SQLSTATE 42703 until someone adds it. */
export const fragile = (): ProjectionDefinition =>
  defineProjection({
    name: 'fragile',
    version: 1,
    schemaSql: 'CREATE TABLE counts (seq bigint NOT NULL, n integer NOT NULL); CREATE TABLE notes (seq bigint NOT NULL, text text NOT NULL);',
    handlers: {
      'test.counted': async (event, tx) => {
        await tx.client.query(`INSERT INTO ${tx.table('counts')} (seq, n) VALUES ($1, $2)`, [event.seq, (event.data as { n: number }).n]);
      },
      'test.noted': async (event, tx) => {
        await tx.client.query(`INSERT INTO ${tx.table('notes')} (seq, text, tag) VALUES ($1, $2, 'x')`, [event.seq, (event.data as { text: string }).text]);
      },
    },
  });
