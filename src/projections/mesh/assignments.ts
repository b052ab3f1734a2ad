import { foldingProjection } from './folding.js';
import type { ReadViews } from './read-views.js';
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

/** Every assignment: which module on which node. */
export const readAssignedModules = async ({ db, view }: ReadViews): Promise<{ node: string; module: string }[]> =>
  (await db.query<{ node: string; module: string }>(`SELECT node, module FROM ${view('assignments')} ORDER BY node, module`)).rows;

/** What is assigned to one node, at which definition version, by module. */
export const assignmentsOf = async ({ db, view }: ReadViews, node: string): Promise<{ module: string; definition_version: number }[]> =>
  (await db.query<{ module: string; definition_version: number }>(`SELECT module, definition_version FROM ${view('assignments')} WHERE node = $1 ORDER BY module`, [node])).rows;

/** The nodes one module is assigned to. */
export const nodesAssigned = async ({ db, view }: ReadViews, module: string): Promise<string[]> =>
  (await db.query<{ node: string }>(`SELECT node FROM ${view('assignments')} WHERE module = $1`, [module])).rows.map((r) => r.node);
