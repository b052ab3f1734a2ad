import type { StoredMeshEvent } from '../../domain/registry.js';
import { foldingProjection } from './folding.js';
import type { ReadViews } from './read-views.js';
import { replaceRows } from './rows.js';

// `facts`: one row per event that states what the control plane observed rather than what an
// operator decided — a declaration that could not be composed, a projection that stalled. A fact
// is never changed afterwards, so each event is one new row; the node and module it concerns are
// columns of their own for the overview to find them.

/** The fact event types: what the controller states about declarations, projections and machines. */
export const FACT_TYPES: readonly string[] = [
  'declaration.refused',
  'projection.stalled',
  'fact.applied',
  'fact.refused',
  'fact.crash-looping',
  'fact.stopped',
  'fact.held',
  'fact.report-mismatch',
  'fact.capabilities',
];

const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);

const rowOf = (event: StoredMeshEvent): Record<string, unknown> => {
  const data = event.data;
  return { seq: event.seq, event_index: event.index, type: event.type, node: 'node' in data ? text(data.node) : null, module: 'module' in data ? text(data.module) : null, data, time: event.time };
};

export const factsProjection = foldingProjection<Record<string, unknown>[]>({
  name: 'facts',
  // fact.capabilities joined the types with no new version: no log held one before the code that states it
  version: 1,
  types: FACT_TYPES,
  open: async () => [],
  apply: (rows, event) => void rows.push(rowOf(event)),
  save: (rows, tx) => replaceRows(tx, 'facts', ['seq', 'event_index'], [], rows),
});

/** The newest facts stated about one node, newest first. */
export const lastFactsOf = async ({ db, view }: ReadViews, node: string, limit: number): Promise<{ seq: string; type: string; module: string | null; time: Date; data: unknown }[]> =>
  (await db.query<{ seq: string; type: string; module: string | null; time: Date; data: unknown }>(`SELECT seq, type, module, time, data FROM ${view('facts')} WHERE node = $1 ORDER BY seq DESC LIMIT $2`, [node, limit])).rows;
