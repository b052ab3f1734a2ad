import { randomUUID } from 'node:crypto';
import type { RolloutPolicy } from '../domain/builds/events.js';
import { VERSION_PATTERN } from '../domain/builds/decider.js';
import { ValidationError } from '../errors.js';
import { rolloutPolicyOf } from '../domain/builds/state.js';
import { nodesAssigned } from '../projections/mesh/assignments.js';
import { readRollout } from '../projections/mesh/builds.js';
import { describeGraph } from './graph-read.js';
import { atFlag, withMeshAt } from './at.js';
import { graphAt } from './at-reads.js';
import { readGraph } from '../projections/mesh/graph.js';
import { printResult, withMesh } from './mesh-session.js';
import { output } from './output.js';
import { withReads } from './reads.js';

// mesh build MODULE [--register-only] | mesh graph [MODULE] [--reaches MODULE] [--stale]
// | mesh module moved MODULE COMMIT | mesh module rollout MODULE roll-out|record


export const buildCommand = async (module: string, values: { json?: true; registerOnly?: true; commandId?: string; plan?: true }): Promise<number> => {
  const out = output(values.json ?? false);
  const registerOnly = values.registerOnly ?? false;
  const result = await withMesh(async ({ mesh, metadata }) => mesh.execute({ type: 'submit-build', module, buildId: randomUUID(), registerOnly, requestedBy: 'operator' }, metadata(values.commandId)), { plan: values.plan });
  if (result.plan) return printResult(out, result);
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
      : `when built, the version is recorded only (${registerOnly ? '--register-only' : 'policy record'})${nodes.length > 0 ? `; ${nodes.join(', ')} keep running ${deployed ?? 'what they run'}` : ''}; roll it out with mesh module deploy ${module} VERSION`;
    if (out.json) out.data({ ok: true, summary: result.summary, seq: result.seq, duplicate: result.duplicate, events: result.events, rollOut: rollsOut, policy, registerOnly, nodes });
    else {
      out.line(`${result.summary}${result.events.length > 0 ? ` (log seq ${result.seq})` : ''}`);
      out.line(then);
    }
    return 0;
  });
};

interface CommandFlags {
  json?: true;
  commandId?: string;
  plan?: true;
}

export const moduleMoved = (module: string, commit: string, values: CommandFlags): Promise<number> =>
  withMesh(async ({ mesh, metadata, config }) => printResult(output(values.json ?? false), await mesh.execute({ type: 'move-module', module, commit, heardFrom: config.actor }, metadata(values.commandId))), { plan: values.plan });

export const moduleRollout = (module: string, policy: RolloutPolicy, values: CommandFlags): Promise<number> =>
  withMesh(async ({ mesh, metadata }) => printResult(output(values.json ?? false), await mesh.execute({ type: 'set-rollout-policy', module, policy }, metadata(values.commandId))), { plan: values.plan });

/** The projections `mesh graph` reads. */
const GRAPH_PROJECTIONS = ['modules', 'builds', 'seats'];

export const graphCommand = async (module: string | undefined, values: { json?: true; reaches?: string; stale?: true; output?: string; at?: string }): Promise<number> => {
  const out = output(values.json ?? false, values.output);
  const question = values.reaches ? { kind: 'reaches' as const, module: values.reaches } : values.stale ? { kind: 'stale' as const } : module ? { kind: 'module' as const, module } : { kind: 'all' as const };
  const at = atFlag(values.at);
  if (at) return withMeshAt(at, async (mesh) => describeGraph(graphAt(mesh.state), question, out, mesh));
  // Answered from the projections, once they hold everything the log held when asked.
  return withReads(GRAPH_PROJECTIONS, {}, async ({ db, schemas }) => describeGraph(await readGraph(db, schemas.read), question, out));
};

export const moduleKeep = (module: string, values: CommandFlags & { reason: string }): Promise<number> =>
  withMesh(async ({ mesh, metadata }) => printResult(output(values.json ?? false), await mesh.execute({ type: 'keep-version', module, reason: values.reason }, metadata(values.commandId))), { plan: values.plan });

/** `mesh module deploy MODULE VERSION`: a malformed version is refused here, before anything is signed. */
export const moduleDeploy = (module: string, version: string, values: CommandFlags): Promise<number> => {
  if (!VERSION_PATTERN.test(version)) {
    throw new ValidationError(`version "${version}" is not an artifact digest or a prefix of one: give sha256:… (at least 4 hexadecimal digits) as mesh graph ${module} prints it`, { field: 'version' });
  }
  return withMesh(async ({ mesh, metadata }) => printResult(output(values.json ?? false), await mesh.execute({ type: 'deploy-version', module, version }, metadata(values.commandId))), { plan: values.plan });
};
