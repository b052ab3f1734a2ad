import type { ProjectionTx } from '../projection.js';

// How the mesh projections write: a batch of events is folded in memory over the rows it touches
// (read once, at the start), and the rows it changed are written back at the end — one statement
// per table for a whole batch, however many events it holds. The rows travel as one JSON
// parameter, unpacked by PostgreSQL into the table's own row type.

export type Row = Record<string, unknown>;

const keyOf = (keyColumns: readonly string[], row: Row): string => JSON.stringify(keyColumns.map((c) => row[c]));

const matches = (keyColumns: readonly string[]): string => keyColumns.map((c) => `t."${c}" = k."${c}"`).join(' AND ');

/** The rows of `table` whose key columns equal one of `keys`. */
export const selectRows = async <R extends Row>(tx: ProjectionTx, table: string, keyColumns: readonly string[], keys: readonly Row[]): Promise<R[]> => {
  if (keys.length === 0) return [];
  const { rows } = await tx.client.query<R>(
    `SELECT t.* FROM ${tx.table(table)} t JOIN json_populate_recordset(NULL::${tx.table(table)}, $1) k ON ${matches(keyColumns)}`,
    [JSON.stringify(keys)],
  );
  return rows;
};

/** Deletes the rows of `table` matching `keys` (any columns: a partial key deletes every row under it), then inserts `rows`. */
export const replaceRows = async (tx: ProjectionTx, table: string, keyColumns: readonly string[], keys: readonly Row[], rows: readonly Row[]): Promise<void> => {
  if (keys.length > 0) {
    await tx.client.query(`DELETE FROM ${tx.table(table)} t USING json_populate_recordset(NULL::${tx.table(table)}, $1) k WHERE ${matches(keyColumns)}`, [JSON.stringify(keys)]);
  }
  if (rows.length > 0) {
    await tx.client.query(`INSERT INTO ${tx.table(table)} SELECT * FROM json_populate_recordset(NULL::${tx.table(table)}, $1)`, [JSON.stringify(rows)]);
  }
};

/**
 * Rows of one table keyed by their key columns, changed in memory during a batch: `set` and
 * `delete` record the final state of each key; `save` writes only the keys that changed.
 */
export class RowImage<R extends Row> {
  private readonly rows = new Map<string, R>();
  private readonly changed = new Map<string, { key: Row; row: R | undefined }>();

  constructor(
    readonly table: string,
    readonly keyColumns: readonly string[],
  ) {}

  /** Reads the rows for `keys` not read yet. */
  async load(tx: ProjectionTx, keys: readonly Row[]): Promise<void> {
    const wanted = new Map<string, Row>();
    for (const key of keys) {
      const k = keyOf(this.keyColumns, key);
      if (!this.rows.has(k) && !this.changed.has(k)) wanted.set(k, Object.fromEntries(this.keyColumns.map((c) => [c, key[c]])));
    }
    for (const row of await selectRows<R>(tx, this.table, this.keyColumns, [...wanted.values()])) this.rows.set(keyOf(this.keyColumns, row), row);
  }

  /** The rows read or set so far that `test` accepts. */
  where(test: (row: R) => boolean): R[] {
    return [...this.rows.values()].filter(test);
  }

  get(key: Row): R | undefined {
    return this.rows.get(keyOf(this.keyColumns, key));
  }

  set(row: R): void {
    const k = keyOf(this.keyColumns, row);
    this.rows.set(k, row);
    this.changed.set(k, { key: row, row });
  }

  delete(key: Row): void {
    const k = keyOf(this.keyColumns, key);
    this.rows.delete(k);
    this.changed.set(k, { key, row: undefined });
  }

  async save(tx: ProjectionTx): Promise<void> {
    const changes = [...this.changed.values()];
    this.changed.clear();
    await replaceRows(
      tx,
      this.table,
      this.keyColumns,
      changes.map((c) => Object.fromEntries(this.keyColumns.map((col) => [col, c.key[col]]))),
      changes.flatMap((c) => (c.row ? [c.row] : [])),
    );
  }
}
