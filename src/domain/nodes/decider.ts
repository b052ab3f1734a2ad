import { z } from 'zod';
import type { Decision } from '../decision.js';
import type { MeshState } from '../mesh/state.js';
import { nodeNamed } from './state.js';
import { nameProblem } from '../limits.js';
import { refuseIfAny, type Problem } from '../refusal.js';
import { DEFAULT_NODE_ROOT, NodeAdded, nodeAggregate } from './events.js';

export const addNodeSchema = z.strictObject({ type: z.literal('add-node'), node: z.string(), root: z.string().optional(), address: z.string().optional() });
export type AddNode = z.infer<typeof addNodeSchema>;

/** A node's root leaves room under it for <module>/<requirement> inside Linux's 4096-byte paths. */
const ROOT_MAX = 1024;
/** A DNS name is at most 253 characters. */
const ADDRESS_MAX = 253;

export const decideAddNode = (command: AddNode, state: MeshState): Decision => {
  const problems: Problem[] = [];
  const badName = nameProblem('node', command.node, 'node');
  if (badName) problems.push(badName);
  const root = command.root ?? DEFAULT_NODE_ROOT;
  if (!root.startsWith('/')) problems.push({ what: '--root', why: `"${root}" is not an absolute path`, remedy: 'give the absolute folder that holds modules\' directories on that node' });
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
