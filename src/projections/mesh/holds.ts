import { FactHeld } from '../../domain/facts/events.js';
import type { NodeHold } from '../../domain/facts/state.js';
import type { ProjectionTx } from '../projection.js';
import { foldingProjection } from './folding.js';
import type { ReadViews } from './read-views.js';
import { replaceRows, selectRows } from './rows.js';

// `node_holds`: what each node holds now, and why — the rows of each module's last `fact.held`,
// as the facts slice keeps them (src/domain/facts/state.ts). A held fact states a module's whole
// hold, so it replaces that module's rows; a resource still held keeps its `since`.

interface HoldRow extends Record<string, unknown> {
  node: string;
  module: string;
  resource: string;
  kind: string;
  reason: string | null;
  since_seq: number;
  since_time: string;
  stated_seq: number;
}

const TABLE = 'node_holds';
const moduleKey = (node: string, module: string): string => JSON.stringify([node, module]);

/** The batch: each (node, module) a fact touched, with its rows as they stand after the facts so far. */
class Holds {
  readonly byModule = new Map<string, { node: string; module: string; rows: Map<string, HoldRow> }>();
  readonly changed = new Set<string>();

  static async open(events: readonly { data: unknown }[], tx: ProjectionTx): Promise<Holds> {
    const holds = new Holds();
    const keys = new Map<string, { node: string; module: string }>();
    for (const event of events) {
      const { node, module } = FactHeld.schema.parse(event.data);
      keys.set(moduleKey(node, module), { node, module });
    }
    for (const [key, { node, module }] of keys) holds.byModule.set(key, { node, module, rows: new Map() });
    for (const row of await selectRows<HoldRow>(tx, TABLE, ['node', 'module'], [...keys.values()])) {
      holds.byModule.get(moduleKey(row.node, row.module))?.rows.set(row.resource, row);
    }
    return holds;
  }

  async save(tx: ProjectionTx): Promise<void> {
    const touched = [...this.changed].flatMap((key) => {
      const entry = this.byModule.get(key);
      return entry ? [entry] : [];
    });
    this.changed.clear();
    // Every row of a touched module goes, then its rows as they now stand come back.
    await replaceRows(
      tx,
      TABLE,
      ['node', 'module'],
      touched.map(({ node, module }) => ({ node, module })),
      touched.flatMap(({ rows }) => [...rows.values()]),
    );
  }
}

export const holdsProjection = foldingProjection<Holds>({
  name: 'holds',
  version: 1,
  types: [FactHeld.type],
  open: (events, tx) => Holds.open(events, tx),
  apply: (holds, event) => {
    const data = FactHeld.schema.parse(event.data);
    const key = moduleKey(data.node, data.module);
    const entry = holds.byModule.get(key);
    if (!entry) return;
    const before = entry.rows;
    entry.rows = new Map(
      data.resources.map((held) => {
        const was = before.get(held.resource);
        const since = was ? { since_seq: Number(was.since_seq), since_time: new Date(was.since_time).toISOString() } : { since_seq: event.seq, since_time: event.time };
        return [held.resource, { node: data.node, module: data.module, resource: held.resource, kind: held.kind, reason: held.reason, ...since, stated_seq: event.seq }];
      }),
    );
    holds.changed.add(key);
  },
  save: (holds, tx) => holds.save(tx),
});

const holdOf = (r: { node: string; module: string; resource: string; kind: string; reason: string | null; since_seq: string; since_time: Date }): NodeHold => ({
  node: r.node,
  module: r.module,
  resource: r.resource,
  kind: r.kind,
  reason: r.reason,
  since: { seq: Number(r.since_seq), time: new Date(r.since_time).toISOString() },
});

/** What is held now, on one node or on every node, by node, module and resource. */
export const readNodeHolds = async ({ db, view }: ReadViews, node?: string): Promise<NodeHold[]> => {
  const { rows } = await db.query<{ node: string; module: string; resource: string; kind: string; reason: string | null; since_seq: string; since_time: Date }>(
    `SELECT node, module, resource, kind, reason, since_seq, since_time FROM ${view(TABLE)}${node === undefined ? '' : ' WHERE node = $1'} ORDER BY node, module, resource`,
    node === undefined ? [] : [node],
  );
  return rows.map(holdOf);
};
