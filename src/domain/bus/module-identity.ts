import { z } from 'zod';
import { isAssigned } from '../assignments/state.js';
import { manifestOf } from '../catalogue/state.js';
import type { MeshState } from '../mesh/state.js';
import { nodeNamed } from '../nodes/state.js';
import type { Problem } from '../refusal.js';
import { consumedSubjects, moduleInbox } from './subjects.js';

// A module on the bus speaks as a key of its own, derived by the control plane for that module on
// that node (docs/decisions.md, "Bus identities and authority"). The mesh-controller seat's
// `bus-identity` tool hands it out on core request/reply, sealed to the node's key, so anyone may
// ask but only the node the module is assigned to can open the answer. Nothing of it is
// persisted: the seed never enters a stream or the log.

export const busIdentityToolSubject = (prefix = 'mesh'): string => `${prefix}.seat.mesh-controller.tool.bus-identity`;

const name = z.string().regex(/^[A-Za-z0-9_-]+$/, 'a name is letters, digits, - or _ (it is a subject token)');
const base64 = z.string().regex(/^[A-Za-z0-9+/]+={0,2}$/);
const problem = z.strictObject({ what: z.string(), why: z.string(), remedy: z.string() });

export const busIdentityRequestSchema = z.strictObject({ node: name, module: name });
export type BusIdentityRequest = z.infer<typeof busIdentityRequestSchema>;

/** A tweetnacl box with a fresh sender key (src/adapters/sealing.ts). */
export const sealedSchema = z.strictObject({ nonce: base64, senderPublicKey: base64, box: base64 });

export const busIdentityAnswerSchema = z.union([
  z.strictObject({ ok: z.literal(true), node: z.string(), module: z.string(), sealed: sealedSchema }),
  z.strictObject({ ok: z.literal(false), refused: z.array(problem) }),
]);
export type BusIdentityAnswer = z.infer<typeof busIdentityAnswerSchema>;

/**
 * What the sealed answer holds, and the identity file the agent writes (0600) for the module's
 * processes: who it is on the server (`nkey`), the key to prove it (`seed`), the inbox prefix its
 * connections must use, and the subjects its `consumes` derive, so it never writes one itself.
 */
export const moduleBusIdentitySchema = z.strictObject({
  node: z.string().min(1),
  module: z.string().min(1),
  /** the public key as nats-server knows it: `U…` */
  nkey: z.string().regex(/^U[A-Z2-7]{55}$/),
  /** the 32-byte ed25519 seed, base64 */
  seed: z.string().regex(/^[A-Za-z0-9+/]{43}=$/),
  inbox: z.string().min(1),
  subjects: z.array(z.string().min(1)),
});
export type ModuleBusIdentity = z.infer<typeof moduleBusIdentitySchema>;

export const requiresMeshBus = (state: MeshState, module: string): boolean =>
  manifestOf(state.catalogue, module)?.requires.some((requirement) => requirement.contract === 'mesh-bus') ?? false;

/** Why the node may not be handed this module's identity now; none when it may. Every problem at once. */
export const busIdentityProblems = (state: MeshState, request: BusIdentityRequest): Problem[] => {
  const { node, module } = request;
  const problems: Problem[] = [];
  const known = nodeNamed(state.nodes, node);
  if (!known) problems.push({ what: `node ${node}`, why: 'the mesh has no such node', remedy: 'ask for a node of the mesh: mesh node list' });
  else if (!known.publicKey) problems.push({ what: `node ${node}`, why: 'it has not enrolled, so there is no key to seal its module identities to', remedy: 'start its agent with an enrolment token: mesh node token --node ' + node });
  if (!isAssigned(state.assignments, { node, module })) {
    problems.push({ what: `${node}/${module}`, why: `module ${module} is not assigned to node ${node}`, remedy: `assign it first: mesh assign ${module} ${node}` });
  } else if (!requiresMeshBus(state, module)) {
    problems.push({ what: `${node}/${module}`, why: `module ${module} does not require mesh-bus, so it has no identity on the bus`, remedy: 'require mesh-bus in its manifest if it speaks on the bus' });
  }
  return problems;
};

/** The public part of a module's identity: its inbox prefix and the subjects it reads. */
export const moduleBusGrant = (state: MeshState, prefix: string, node: string, module: string): { inbox: string; subjects: string[] } => ({
  inbox: moduleInbox(module, node),
  subjects: consumedSubjects(prefix, manifestOf(state.catalogue, module)?.consumes ?? []),
});
