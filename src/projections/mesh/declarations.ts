import { DeclarationRefused } from '../../domain/declarations/events.js';
import { foldingProjection } from './folding.js';
import type { ReadViews } from './read-views.js';
import { RowImage } from './rows.js';

// `declaration_refusals`: the last refusal stated for each node's declaration (declaration.refused),
// as evolveMesh keeps it. Whether it is overcome is not the log's to say: NODES holds what was
// published since, and `refusalOvercome` compares the two.

interface RefusalRow extends Record<string, unknown> {
  node: string;
  seq: number;
  time: string;
  derived_from_seq: number;
  reason: string;
  unresolved: { what: string; why: string; remedy: string }[];
}

export const declarationsProjection = foldingProjection<RowImage<RefusalRow>>({
  name: 'declarations',
  version: 1,
  types: [DeclarationRefused.type],
  // A refusal replaces the one before it whole: nothing needs reading first.
  open: async () => new RowImage<RefusalRow>('declaration_refusals', ['node']),
  apply: (refusals, event) => {
    const data = DeclarationRefused.schema.parse(event.data);
    refusals.set({ node: data.node, seq: event.seq, time: event.time, derived_from_seq: data.derivedFromSeq, reason: data.reason, unresolved: data.unresolved });
  },
  save: (refusals, tx) => refusals.save(tx),
});

export interface StatedRefusal {
  node: string;
  /** where it was stated in the log */
  seq: number;
  time: string;
  /** the log sequence the refused composition was derived at */
  derivedFromSeq: number;
  unresolved: { what: string; why: string; remedy: string }[];
}

/** The last refusal stated for each node, by node name. */
export const readRefusals = async ({ db, view }: ReadViews): Promise<StatedRefusal[]> => {
  const { rows } = await db.query<{ node: string; seq: string; time: Date; derived_from_seq: string; unresolved: StatedRefusal['unresolved'] }>(
    `SELECT node, seq, time, derived_from_seq, unresolved FROM ${view('declaration_refusals')} ORDER BY node`,
  );
  return rows.map((r) => ({ node: r.node, seq: Number(r.seq), time: new Date(r.time).toISOString(), derivedFromSeq: Number(r.derived_from_seq), unresolved: r.unresolved }));
};
