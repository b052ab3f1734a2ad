import { randomUUID } from 'node:crypto';
import { ROLLOUT_POLICIES } from '../domain/builds/events.js';
import { rolloutPolicyOf } from '../domain/builds/state.js';
import { nodesAssigned } from '../projections/mesh/assignments.js';
import { readRollout } from '../projections/mesh/builds.js';
import { ValidationError } from '../errors.js';
import { describeGraph } from './graph-read.js';
import { readGraph } from '../projections/mesh/graph.js';
import { parseFlags } from './flags.js';
import { printResult, withMesh } from './mesh-session.js';
import { output } from './output.js';
import { withReads } from './reads.js';

// mesh build MODULE [--register-only] | mesh graph [MODULE] [--reaches MODULE] [--stale]
// | mesh module moved MODULE COMMIT | mesh module rollout MODULE roll-out|record

export const buildCommand = async (args: string[]): Promise<number> => {
  const { values, positionals } = parseFlags(args, { json: { type: 'boolean', default: false }, 'register-only': { type: 'boolean', default: false }, 'command-id': { type: 'string' } }, 1);
  const out = output(values.json ?? false);
  const module = positionals[0];
  if (!module) throw new ValidationError('usage: mesh build MODULE [--register-only]', { field: 'module' });
  const registerOnly = values['register-only'] ?? false;
  const result = await withMesh(async ({ mesh, metadata }) => mesh.execute({ type: 'submit-build', module, buildId: randomUUID(), registerOnly, requestedBy: 'operator' }, metadata(values['command-id'])));
  // What the build will do once built, as the projections say it once they hold the submission.
  return withReads(['assignments', 'builds'], { atLeast: result.seq }, async (session) => {
    const nodes = (await nodesAssigned(session, module)).sort();
    const rollout = await readRollout(session, module);
    const policy = rolloutPolicyOf(rollout.policy);
    const rollsOut = !registerOnly && policy === 'roll-out';
    const deployed = rollout.deployedDigest ?? undefined;
    const then = rollsOut
      ? nodes.length > 0
        ? `when built, a new version rolls out to ${nodes.join(', ')} (policy roll-out)`
        : 'when built, a new version is recorded; no node runs it yet (policy roll-out)'
      : `when built, the version is recorded only (${registerOnly ? '--register-only' : 'policy record'})${nodes.length > 0 ? `; ${nodes.join(', ')} keep running ${deployed ?? 'what they run'}` : ''}`;
    if (out.json) out.data({ ok: true, summary: result.summary, seq: result.seq, duplicate: result.duplicate, events: result.events, rollOut: rollsOut, policy, registerOnly, nodes });
    else {
      out.line(`${result.summary}${result.events.length > 0 ? ` (log seq ${result.seq})` : ''}`);
      out.line(then);
    }
    return 0;
  });
};

export const moduleMovedCommand = (module: string | undefined, commit: string | undefined, json: boolean, commandId?: string): Promise<number> => {
  if (!module || !commit) throw new ValidationError('usage: mesh module moved MODULE COMMIT', { field: 'arguments' });
  return withMesh(async ({ mesh, metadata, config }) => printResult(output(json), await mesh.execute({ type: 'move-module', module, commit, heardFrom: config.actor }, metadata(commandId))));
};

export const moduleRolloutCommand = (module: string | undefined, policy: string | undefined, json: boolean, commandId?: string): Promise<number> => {
  const rollout = ROLLOUT_POLICIES.find((known) => known === policy);
  if (!module || !rollout) throw new ValidationError('usage: mesh module rollout MODULE roll-out|record', { field: 'arguments' });
  return withMesh(async ({ mesh, metadata }) => printResult(output(json), await mesh.execute({ type: 'set-rollout-policy', module, policy: rollout }, metadata(commandId))));
};

/** The projections `mesh graph` reads. */
const GRAPH_PROJECTIONS = ['modules', 'builds', 'seats'];

export const graphCommand = async (args: string[]): Promise<number> => {
  const { values, positionals } = parseFlags(args, { json: { type: 'boolean', default: false }, reaches: { type: 'string' }, stale: { type: 'boolean', default: false } }, 1);
  const out = output(values.json ?? false);
  // Answered from the projections, once they hold everything the log held when asked.
  return withReads(GRAPH_PROJECTIONS, {}, async ({ db, schemas }) => {
    const graph = await readGraph(db, schemas.read);
    const question = values.reaches ? { kind: 'reaches' as const, module: values.reaches } : values.stale ? { kind: 'stale' as const } : positionals[0] ? { kind: 'module' as const, module: positionals[0] } : { kind: 'all' as const };
    return describeGraph(graph, question, out);
  });
};

export const moduleKeepCommand = (module: string | undefined, reason: string | undefined, json: boolean, commandId?: string): Promise<number> => {
  if (!module || reason === undefined) throw new ValidationError('usage: mesh module keep MODULE --reason TEXT (what its nodes run is intended, though its source moved or its newest build failed)', { field: module ? '--reason' : 'module' });
  return withMesh(async ({ mesh, metadata }) => printResult(output(json), await mesh.execute({ type: 'keep-version', module, reason }, metadata(commandId))));
};
