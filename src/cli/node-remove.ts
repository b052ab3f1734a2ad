import { Refusal } from '../domain/refusal.js';
import { assignmentsOf } from '../projections/mesh/assignments.js';
import { printResult, withMesh } from './mesh-session.js';
import { printPlan } from './plan-output.js';
import type { Output } from './output.js';
import { withReads } from './reads.js';

// `mesh node remove NAME --drain`: every module on the node is unassigned by a command of its own
// (so each is an event in the log, with the operator who asked), then the node is removed. The
// modules come from the assignments projection once it has reached the log's head; one that
// another answers for on the same node waits until that one is gone. Whatever cannot be
// unassigned (a module elsewhere answered by one of them) is refused, named, and the node stays.

/** `--command-id ID`: each step its own id under it, so the whole drain retried acts once. */
const stepId = (commandId: string | undefined, step: string): string | undefined => (commandId === undefined ? undefined : `${commandId}.${step}`);

export const drainAndRemove = async (out: Output, node: string, commandId?: string, options: { plan?: boolean | undefined } = {}): Promise<number> => {
  const modules = (await withReads(['assignments'], {}, (session) => assignmentsOf(session, node))).map((a) => a.module);
  return withMesh(async ({ mesh, metadata }) => {
    // Planned as one: each unassign decided on the mesh the ones before it leave, then the removal.
    if (options.plan) {
      const steps = [...modules.map((module) => ({ command: { type: 'unassign' as const, module, node }, metadata: metadata(stepId(commandId, `unassign.${module}`)) })), { command: { type: 'remove-node' as const, node }, metadata: metadata(stepId(commandId, 'remove')) }];
      return printPlan(out, await mesh.plan(steps));
    }
    let pending = modules;
    while (pending.length > 0) {
      const refused: Refusal[] = [];
      const left: string[] = [];
      for (const module of pending) {
        try {
          printResult(out, await mesh.execute({ type: 'unassign', module, node }, metadata(stepId(commandId, `unassign.${module}`))));
        } catch (error) {
          // Gone already (another operator took it off): nothing to drain.
          if (error instanceof Refusal && error.problems.every((p) => p.missing === 'assignment')) continue;
          if (!(error instanceof Refusal)) throw error;
          refused.push(error);
          left.push(module);
        }
      }
      // Nothing moved this round: what is left is answered from elsewhere, and says so.
      if (left.length === pending.length) throw new Refusal(`draining node ${node}`, refused.flatMap((r) => r.problems));
      pending = left;
    }
    return printResult(out, await mesh.execute({ type: 'remove-node', node }, metadata(stepId(commandId, 'remove'))));
  });
};
