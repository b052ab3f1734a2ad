import type pg from 'pg';
import { migrateSchema } from '../adapters/migrations.js';
import type { Report } from '../domain/reports/report.js';
import type { BudgetNote } from './fact-budget.js';

// The controller's own record of what each node last said and when it was last heard: not a
// projection of the log (reports and heartbeats are not mesh changes), so it lives in a schema of
// the controller's, written only here. Its tables are made by `migrations/controller`.

export const DEFAULT_STATUS_SCHEMA = 'controller';

/** The schema of the controller's own node status table: MESH_CONTROLLER_SCHEMA, else `controller`. */
export const statusSchemaFromEnv = (env: NodeJS.ProcessEnv = process.env): string => env.MESH_CONTROLLER_SCHEMA ?? DEFAULT_STATUS_SCHEMA;

const ident = (name: string): string => `"${name.replaceAll('"', '""')}"`;

/** Creates the controller's schema and applies its migrations (`migrations/controller`) once each; safe to run concurrently. */
export const ensureNodeStatus = (pool: pg.Pool, schema: string): Promise<void> => migrateSchema(pool, { schema, folder: 'controller' });

export const recordReport = async (pool: pg.Pool, schema: string, report: Report, receivedAt: Date): Promise<void> => {
  await pool.query(
    `INSERT INTO ${ident(schema)}.node_status (node, report_sequence, report_digest, report, reported_at)
     VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (node) DO UPDATE SET report_sequence = excluded.report_sequence, report_digest = excluded.report_digest,
       report = excluded.report, reported_at = excluded.reported_at
     WHERE node_status.reported_at IS NULL OR node_status.reported_at <= excluded.reported_at`,
    [report.node, report.sequence, report.digest, JSON.stringify(report), receivedAt],
  );
};

export const recordHeartbeats = async (pool: pg.Pool, schema: string, beats: ReadonlyMap<string, Date>): Promise<void> => {
  if (beats.size === 0) return;
  const nodes = [...beats.keys()];
  const times = nodes.map((node) => beats.get(node)?.toISOString());
  await pool.query(
    `INSERT INTO ${ident(schema)}.node_status (node, heartbeat_at)
     SELECT * FROM unnest($1::text[], $2::timestamptz[])
     ON CONFLICT (node) DO UPDATE SET heartbeat_at = GREATEST(node_status.heartbeat_at, excluded.heartbeat_at)`,
    [nodes, times],
  );
};

/** The nodes that said more than their budget (fact-budget.ts), each named until its note's `until`. */
export const recordBudgetNotes = async (pool: pg.Pool, schema: string, notes: readonly BudgetNote[]): Promise<void> => {
  if (notes.length === 0) return;
  await pool.query(
    `INSERT INTO ${ident(schema)}.node_status (node, over_budget, over_budget_since, over_budget_at, over_budget_until)
     SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::timestamptz[], $5::timestamptz[])
     ON CONFLICT (node) DO UPDATE SET over_budget = excluded.over_budget, over_budget_since = excluded.over_budget_since,
       over_budget_at = excluded.over_budget_at, over_budget_until = excluded.over_budget_until`,
    [notes.map((n) => n.node), notes.map((n) => n.line), notes.map((n) => n.since.toISOString()), notes.map((n) => n.at.toISOString()), notes.map((n) => n.until.toISOString())],
  );
};

/** A node over its budget, as recorded: what it said beyond it, since when, and until when it is named. */
export interface OverBudget {
  line: string;
  since: Date;
  at: Date;
  until: Date;
}

export interface NodeStatusRow {
  node: string;
  reportSequence: number | null;
  reportDigest: string | null;
  report: Report | null;
  reportedAt: Date | null;
  heartbeatAt: Date | null;
  overBudget: OverBudget | null;
}

interface Row {
  node: string;
  report_sequence: string | null;
  report_digest: string | null;
  report: Report | null;
  reported_at: Date | null;
  heartbeat_at: Date | null;
  over_budget: string | null;
  over_budget_since: Date | null;
  over_budget_at: Date | null;
  over_budget_until: Date | null;
}

const overBudgetOf = (r: Row): OverBudget | null =>
  r.over_budget !== null && r.over_budget_since && r.over_budget_at && r.over_budget_until ? { line: r.over_budget, since: r.over_budget_since, at: r.over_budget_at, until: r.over_budget_until } : null;

export const readNodeStatus = async (pool: pg.Pool, schema: string): Promise<NodeStatusRow[]> => {
  const { rows } = await pool.query<Row>(
    `SELECT node, report_sequence, report_digest, report, reported_at, heartbeat_at, over_budget, over_budget_since, over_budget_at, over_budget_until
     FROM ${ident(schema)}.node_status ORDER BY node`,
  );
  return rows.map((r) => ({
    node: r.node,
    reportSequence: r.report_sequence === null ? null : Number(r.report_sequence),
    reportDigest: r.report_digest,
    report: r.report,
    reportedAt: r.reported_at,
    heartbeatAt: r.heartbeat_at,
    overBudget: overBudgetOf(r),
  }));
};
