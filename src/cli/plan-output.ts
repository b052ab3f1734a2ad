import type { FieldChange, MeshPlan, NodePlan } from '../domain/declarations/plan.js';
import { proseLine, type Output } from './output.js';

// `mesh … --plan`, printed: what would be appended, then per node what its declaration would
// become, as `nomad job plan` shows a job's diff — `+` added, `-` removed, `~` changed. With
// --json, the plan is one document.

const SIDE = { declared: 'its declaration', uncomposable: 'no declaration it can compose', absent: 'not a node (an empty declaration)' } as const;

const value = (v: unknown): string => (v === null || v === undefined ? 'none' : Array.isArray(v) ? (v.length > 0 ? v.join(', ') : 'none') : String(v));
const fieldText = (f: FieldChange): string => `${f.field} ${value(f.from)} → ${value(f.to)}`;
const MARK = { added: '+', removed: '-', changed: '~' } as const;

const nodeLines = (node: NodePlan): string[] => {
  const head = node.before === node.after ? `node ${node.node}: its declaration would change` : `node ${node.node}: ${SIDE[node.before]} → ${SIDE[node.after]}`;
  const lines = [head];
  for (const module of node.modules) {
    const fields = module.change === 'added' ? module.fields.map((f) => `${f.field} ${value(f.to)}`) : module.fields.map(fieldText);
    lines.push(`  ${MARK[module.change]} ${module.module}${fields.length > 0 ? ` (${fields.join('; ')})` : ''}`);
    for (const r of module.resources) lines.push(`      ${MARK[r.change]} ${r.kind} ${r.key}${r.fields.length > 0 ? `: ${r.fields.join(', ')}` : ''}`);
  }
  for (const problem of node.problems) lines.push(`  would not compose: ${problem.what}: ${problem.why} (the node would keep its previous declaration)`);
  return lines;
};

export const printPlan = (out: Output, plan: MeshPlan): number => {
  if (out.json) {
    out.data({ ok: true, plan: true, seq: plan.seq, summary: plan.summaries.join('; '), summaries: plan.summaries, events: plan.events, nodes: plan.nodes, appended: false });
    return 0;
  }
  proseLine(out, `plan at log seq ${plan.seq}: ${plan.summaries.join('; ')}`);
  proseLine(out, plan.events.length > 0 ? `it would append ${plan.events.length} event${plan.events.length === 1 ? '' : 's'}: ${plan.events.map((e) => `${e.type} (${e.aggregate})`).join(', ')}` : 'it would append nothing: the mesh is already so');
  if (plan.nodes.length === 0) out.line("no node's declaration would change");
  for (const node of plan.nodes) for (const line of nodeLines(node)) proseLine(out, line);
  out.line('nothing was appended (--plan)');
  return 0;
};
