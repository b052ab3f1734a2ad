import { z } from 'zod';
import { assignmentsOn } from '../assignments/state.js';
import { manifestOf } from '../catalogue/state.js';
import type { Decision } from '../decision.js';
import type { MeshState } from '../mesh/state.js';
import { NodePublicDomainSet, nodeAggregate } from '../nodes/events.js';
import { allNodes, nodeNamed } from '../nodes/state.js';
import { refuseIfAny, type Problem } from '../refusal.js';
import { claimRoutes } from './grants.js';

export const setNodeDomainSchema = z.strictObject({ type: z.literal('set-node-domain'), node: z.string(), domain: z.string() });
export type SetNodeDomain = z.infer<typeof setNodeDomainSchema>;

/** A DNS name: lower-case labels of 1–63 letters, digits and -, at most 190 in all, leaving a route's label (63) room under 253. */
const DOMAIN = /^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
export const DOMAIN_MAX = 253 - 64;

/**
 * A node's public domain. Its modules' routes ask for their names under it again, checked as at
 * assignment, so a domain that would ask for a name another assignment holds or claims is refused
 * naming it, and nothing is recorded. The holder of mesh-proxy hands the new names back.
 */
export const decideSetNodeDomain = (command: SetNodeDomain, state: MeshState): Decision => {
  const subject = `setting node ${command.node}'s public domain`;
  const node = nodeNamed(state.nodes, command.node);
  const problems: Problem[] = [];
  if (!node) {
    const known = [...allNodes(state.nodes)].map((n) => n.name).sort();
    problems.push({ what: command.node, why: 'no such node', remedy: known.length > 0 ? `nodes: ${known.join(', ')}` : 'the mesh has no nodes', missing: 'node' });
  }
  if (!DOMAIN.test(command.domain)) problems.push({ what: command.domain, why: `"${command.domain}" is not a DNS name in lower case (labels of letters, digits and -, joined by dots)`, remedy: 'give a domain such as example.org' });
  else if (command.domain.length > DOMAIN_MAX) problems.push({ what: command.domain, why: `it is ${command.domain.length} characters: a route's name (up to 63) and a dot go in front of it, and a DNS name is at most 253`, remedy: `give a domain of at most ${DOMAIN_MAX} characters` });
  refuseIfAny(subject, problems);
  if (node?.publicDomain === command.domain) return { aggregate: nodeAggregate(command.node), events: [], summary: `node ${command.node}'s public domain is already ${command.domain}` };
  const asked: string[] = [];
  for (const assignment of assignmentsOn(state.assignments, command.node)) {
    const manifest = manifestOf(state.catalogue, assignment.module);
    if (!manifest) continue;
    const claimed = claimRoutes(state, assignment, manifest, command.domain, { whenNoProxy: 'skip' });
    problems.push(...claimed.problems);
    asked.push(...claimed.asks.map((a) => a.publicName));
  }
  refuseIfAny(subject, problems);
  return {
    aggregate: nodeAggregate(command.node),
    events: [{ type: NodePublicDomainSet.type, data: { node: command.node, domain: command.domain } }],
    summary: `node ${command.node}'s public domain is ${command.domain}${asked.length > 0 ? `; public names ${asked.join(', ')} asked of the holder of mesh-proxy` : ''}`,
  };
};
