import type pg from 'pg';
import type { StoredEvent } from '../domain/events/envelope.js';
import { copyFromStdin, copyText } from './copy.js';
import { defineProjection, EVERY_EVENT, migrationSql, type ProjectionTx } from './projection.js';

// The audit index of the log: who did what, when, why (causation) and as part of what
// (correlation), one row per event of every type. Its schema is migrations/audit/v<version>.sql.

const COLUMNS = 'seq, event_index, event_id, type, aggregate, version, actor, command_id, causation_id, correlation_id, time';

/** Lines of COPY text per chunk sent: big enough to amortise the calls, small enough to stream. */
const LINES_PER_CHUNK = 2_000;

const lineOf = (e: StoredEvent): string =>
  `${e.seq}\t${e.index}\t${copyText(e.id)}\t${copyText(e.type)}\t${copyText(e.aggregate)}\t${e.version}\t${copyText(e.actor)}\t${copyText(e.commandId)}\t${copyText(e.causationId)}\t${copyText(e.correlationId)}\t${copyText(e.time)}\n`;

// A batch goes in with COPY, PostgreSQL's bulk-load path: a rebuild writes every event of the
// log here, and nothing else costs as little per row.
const copyMany = async (events: readonly StoredEvent[], tx: ProjectionTx): Promise<void> => {
  const chunks: Buffer[] = [];
  for (let start = 0; start < events.length; start += LINES_PER_CHUNK) {
    let text = '';
    for (const event of events.slice(start, start + LINES_PER_CHUNK)) text += lineOf(event);
    chunks.push(Buffer.from(text));
  }
  await copyFromStdin(tx.client, `${tx.table('audit')} (${COLUMNS})`, chunks);
};

const insertOne = async (e: StoredEvent, tx: ProjectionTx): Promise<void> => {
  await tx.client.query(`INSERT INTO ${tx.table('audit')} (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`, [
    e.seq,
    e.index,
    e.id,
    e.type,
    e.aggregate,
    e.version,
    e.actor,
    e.commandId,
    e.causationId,
    e.correlationId,
    e.time,
  ]);
};

export const auditProjection = defineProjection({
  name: 'audit',
  version: 1,
  schemaSql: migrationSql('audit', 1),
  handlers: { [EVERY_EVENT]: insertOne },
  applyMany: copyMany,
});

// Reading the index: which events match an operator's query (`mesh log`), a page at a time.

/** What a reader asked for, up to the sequence the projection was waited for. */
export interface LogQuery {
  fromSeq: number;
  toSeq: number;
  /** an aggregate, a kind alone (every aggregate of it), or a pattern with `*` and a final `>`; already validated */
  aggregate?: string | undefined;
  types: readonly string[];
  /** exact, or a prefix when it ends in `*` */
  actor?: string | undefined;
  correlation?: string | undefined;
  /** milliseconds since the epoch, both inclusive */
  after?: number | undefined;
  before?: number | undefined;
}

export interface IndexRow {
  seq: number;
  index: number;
  id: string;
  type: string;
}

/** Rows of the audit index read per query; each page's events are fetched and printed before the next. */
export const PAGE_ROWS = 2_000;
/** The WHERE clause of the audit index for `query`, its parameters numbered from $1. */
export const auditWhere = (query: LogQuery): { where: string; values: unknown[] } => {
  const values: unknown[] = [];
  const param = (value: unknown, cast = ''): string => {
    values.push(value);
    return `$${values.length}${cast}`;
  };
  const clauses = [`seq >= ${param(query.fromSeq, '::bigint')}`, `seq <= ${param(query.toSeq, '::bigint')}`];
  if (query.aggregate !== undefined) clauses.push(aggregateClause(query.aggregate, param));
  if (query.types.length > 0) clauses.push(`type = ANY(${param([...query.types], '::text[]')})`);
  if (query.actor) {
    // starts_with, not LIKE: the prefix is compared as text, so `%`, `_` and `\` in it mean themselves.
    clauses.push(query.actor.endsWith('*') ? `starts_with(actor, ${param(query.actor.slice(0, -1))})` : `actor = ${param(query.actor)}`);
  }
  if (query.correlation) clauses.push(`correlation_id = ${param(query.correlation)}`);
  if (query.after !== undefined) clauses.push(`time >= ${param(new Date(query.after).toISOString(), '::timestamptz')}`);
  if (query.before !== undefined) clauses.push(`time <= ${param(new Date(query.before).toISOString(), '::timestamptz')}`);
  return { where: clauses.join(' AND '), values };
};

/**
 * The aggregate filter as the log's subjects match it: `kind` alone is `kind.>`, `*` one token,
 * a final `>` one or more. Without a wildcard it is one aggregate (and the index on it serves).
 */
const aggregateClause = (filter: string, param: (value: unknown) => string): string => {
  const regex = aggregateRegex(filter);
  return regex === undefined ? `aggregate = ${param(filter)}` : `aggregate ~ ${param(regex)}`;
};

/** The filter as a regular expression over aggregates, or undefined when it names one aggregate. */
export const aggregateRegex = (filter: string): string | undefined => {
  const tokens = filter.split('.');
  const pattern = tokens.length === 1 && tokens[0] !== '*' && tokens[0] !== '>' ? [...tokens, '>'] : tokens;
  if (!pattern.some((token) => token === '*' || token === '>')) return undefined;
  return `^${pattern.map((token) => (token === '*' ? '[^.]+' : token === '>' ? '.+' : token.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&'))).join('\\.')}$`;
};

/** The index rows matching `query`, a page at a time, in log order. */
export async function* matchingRows(db: pg.Pool, view: string, query: LogQuery): AsyncIterable<IndexRow[]> {
  const { where, values } = auditWhere(query);
  let after = { seq: 0, index: -1 };
  for (;;) {
    const page = await db.query<{ seq: string; event_index: number; event_id: string; type: string }>(
      `SELECT seq, event_index, event_id, type FROM ${view}
        WHERE ${where} AND (seq, event_index) > ($${values.length + 1}::bigint, $${values.length + 2}::integer)
        ORDER BY seq, event_index LIMIT ${PAGE_ROWS}`,
      [...values, after.seq, after.index],
    );
    const rows = page.rows.map((row) => ({ seq: Number(row.seq), index: row.event_index, id: row.event_id, type: row.type }));
    if (rows.length > 0) yield rows;
    const last = rows.at(-1);
    if (!last || rows.length < PAGE_ROWS) return;
    after = { seq: last.seq, index: last.index };
  }
}


/** The newest `limit` index rows matching `query`, in log order: what a page shows of a long log. */
export const newestMatchingRows = async (db: Pick<pg.Pool, 'query'>, view: string, query: LogQuery, limit: number): Promise<IndexRow[]> => {
  const { where, values } = auditWhere(query);
  const page = await db.query<{ seq: string; event_index: number; event_id: string; type: string }>(
    `SELECT seq, event_index, event_id, type FROM ${view} WHERE ${where} ORDER BY seq DESC, event_index DESC LIMIT ${Math.max(1, Math.floor(limit))}`,
    values,
  );
  return page.rows.map((row) => ({ seq: Number(row.seq), index: row.event_index, id: row.event_id, type: row.type })).reverse();
};
