import type pg from 'pg';

// What a read model's queries run against: a connection that may read the projections, and the
// read schema's view of each table. The queries live beside the folding that writes the tables.

export interface ReadViews {
  db: Pick<pg.Pool, 'query'>;
  /** a view of the read schema, quoted: `"mesh"."seats"` */
  view: (table: string) => string;
}
