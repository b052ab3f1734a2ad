import { foldingProjection } from './folding.js';
import { RowImage, replaceRows } from './rows.js';

// `assignments` and `assignment_resolutions`, as evolveMesh folds assignment.created (the
// assignment stated whole, replacing any before it) and assignment.removed.

interface Batch {
  assignments: RowImage<Record<string, unknown>>;
  /** the resolutions of each assignment the batch stated or removed, by `node/module` */
  resolutions: Map<string, { node: string; module: string; rows: Record<string, unknown>[] }>;
}

export const assignmentsProjection = foldingProjection<Batch>({
  name: 'assignments',
  version: 1,
  types: ['assignment.created', 'assignment.removed'],
  open: async () => ({ assignments: new RowImage('assignments', ['node', 'module']), resolutions: new Map() }),
  apply: (batch, event) => {
    if (event.type === 'assignment.created') {
      const data = event.data;
      batch.assignments.set({
        node: data.node,
        module: data.module,
        definition_version: data.definitionVersion,
        pins: data.pins,
        values: data.values,
        placements: data.placements,
        assigned_at: event.time,
        assigned_seq: event.seq,
      });
      batch.resolutions.set(`${data.node}/${data.module}`, {
        node: data.node,
        module: data.module,
        rows: data.resolutions.map((r, position) => ({ node: data.node, module: data.module, position, requirement: r.requirement, contract: r.contract, provider: r.provider, answer: r.answer })),
      });
    } else if (event.type === 'assignment.removed') {
      const data = event.data;
      batch.assignments.delete({ node: data.node, module: data.module });
      batch.resolutions.set(`${data.node}/${data.module}`, { node: data.node, module: data.module, rows: [] });
    }
  },
  save: async (batch, tx) => {
    await batch.assignments.save(tx);
    const touched = [...batch.resolutions.values()];
    await replaceRows(
      tx,
      'assignment_resolutions',
      ['node', 'module'],
      touched.map(({ node, module }) => ({ node, module })),
      touched.flatMap((t) => t.rows),
    );
  },
});
