import { z } from 'zod';
import type { Decision } from '../decision.js';
import type { MeshState } from '../mesh/state.js';
import { allNodes, nodeNamed } from './state.js';
import { assignmentsOn } from '../assignments/state.js';
import { nameProblem } from '../limits.js';
import { hostPathProblem } from '../host-paths.js';
import { refuseIfAny, type Problem } from '../refusal.js';
import { DEFAULT_NODE_ROOT, NodeAdded, NodeCordoned, NodeRemoved, NodeUncordoned, nodeAggregate } from './events.js';

export const addNodeSchema = z.strictObject({ type: z.literal('add-node'), node: z.string(), root: z.string().optional(), address: z.string().optional() });
export type AddNode = z.infer<typeof addNodeSchema>;

export const cordonNodeSchema = z.strictObject({ type: z.literal('cordon-node'), node: z.string() });
export type CordonNode = z.infer<typeof cordonNodeSchema>;

export const uncordonNodeSchema = z.strictObject({ type: z.literal('uncordon-node'), node: z.string() });
export type UncordonNode = z.infer<typeof uncordonNodeSchema>;

export const removeNodeSchema = z.strictObject({ type: z.literal('remove-node'), node: z.string() });
export type RemoveNode = z.infer<typeof removeNodeSchema>;

/** A node's root leaves room under it for <module>/<requirement> inside Linux's 4096-byte paths. */
const ROOT_MAX = 1024;
/** A DNS name is at most 253 characters. */
const ADDRESS_MAX = 253;

export const decideAddNode = (command: AddNode, state: MeshState): Decision => {
  const problems: Problem[] = [];
  const badName = nameProblem('node', command.node, 'node');
  if (badName) problems.push(badName);
  const root = command.root ?? DEFAULT_NODE_ROOT;
  const badRoot = hostPathProblem(root, 'root');
  // Modules' folders, and the secrets the mesh places (`.mesh`), go under a node's root: none of the machine's own folders.
  if (badRoot) problems.push({ what: '--root', why: `"${root.slice(0, 120)}" ${badRoot}: a node's root holds modules' folders and the secrets the mesh places for them`, remedy: `give the absolute folder that holds modules' directories on that node, e.g. ${DEFAULT_NODE_ROOT}` });
  const existing = nodeNamed(state.nodes, command.node);
  if (existing && existing.root !== root) problems.push({ what: command.node, why: `node ${command.node} exists with root ${existing.root}`, remedy: 'a node\'s root is fixed when it is added' });
  if (root.length > ROOT_MAX) problems.push({ what: '--root', why: `the root is ${root.length} characters, more than ${ROOT_MAX}: modules' directories go under it, and a path is at most 4096 bytes`, remedy: 'choose a shorter folder' });
  if (command.address !== undefined && command.address.length > ADDRESS_MAX) problems.push({ what: '--address', why: `"${command.address.slice(0, 40)}…" is ${command.address.length} characters, and a host name is at most ${ADDRESS_MAX} (DNS)`, remedy: 'give a shorter host name or an IP address' });
  else if (command.address !== undefined && !/^[A-Za-z0-9.:_-]+$/.test(command.address)) problems.push({ what: '--address', why: `"${command.address}" is not a host name or IP address`, remedy: 'give the address other nodes reach it at' });
  refuseIfAny(`adding node ${command.node}`, problems);
  if (existing) return { aggregate: nodeAggregate(command.node), events: [], summary: `node ${command.node} already exists` };
  return {
    aggregate: nodeAggregate(command.node),
    events: [{ type: NodeAdded.type, data: { node: command.node, root, address: command.address ?? null } }],
    summary: `node ${command.node} added (root ${root}${command.address ? `, address ${command.address}` : ''})`,
  };
};

/** The node a command names, or a not-found refusal listing the nodes there are. */
const existingNode = (subject: string, state: MeshState, node: string) => {
  const found = nodeNamed(state.nodes, node);
  if (!found) {
    const known = [...allNodes(state.nodes)].map((n) => n.name).sort();
    refuseIfAny(subject, [{ what: node, why: 'no such node', remedy: known.length > 0 ? `nodes: ${known.join(', ')}` : 'the mesh has no nodes', missing: 'node' }]);
  }
  return found;
};

export const decideCordonNode = (command: CordonNode, state: MeshState): Decision => {
  const node = existingNode(`cordoning node ${command.node}`, state, command.node);
  if (node?.cordoned) return { aggregate: nodeAggregate(command.node), events: [], summary: `node ${command.node} is already cordoned` };
  const runs = assignmentsOn(state.assignments, command.node).map((a) => a.module);
  return {
    aggregate: nodeAggregate(command.node),
    events: [{ type: NodeCordoned.type, data: { node: command.node } }],
    summary: `node ${command.node} cordoned: it takes no new assignment; ${runs.length > 0 ? `${runs.join(', ')} keep${runs.length === 1 ? 's' : ''} running` : 'nothing runs on it'}`,
  };
};

export const decideUncordonNode = (command: UncordonNode, state: MeshState): Decision => {
  const node = existingNode(`uncordoning node ${command.node}`, state, command.node);
  if (!node?.cordoned) return { aggregate: nodeAggregate(command.node), events: [], summary: `node ${command.node} is not cordoned` };
  return { aggregate: nodeAggregate(command.node), events: [{ type: NodeUncordoned.type, data: { node: command.node } }], summary: `node ${command.node} uncordoned: it takes new assignments again` };
};

export const decideRemoveNode = (command: RemoveNode, state: MeshState): Decision => {
  const subject = `removing node ${command.node}`;
  existingNode(subject, state, command.node);
  refuseIfAny(
    subject,
    assignmentsOn(state.assignments, command.node).map((a) => ({
      what: `${command.node}/${a.module}`,
      why: `${a.module} is still assigned to ${command.node}`,
      remedy: `mesh unassign ${a.module} ${command.node}, or remove with --drain, which unassigns each first`,
    })),
  );
  return {
    aggregate: nodeAggregate(command.node),
    events: [{ type: NodeRemoved.type, data: { node: command.node } }],
    summary: `node ${command.node} removed: its host's bus identity and its enrolment tokens are retired, and its last declaration is empty`,
  };
};
