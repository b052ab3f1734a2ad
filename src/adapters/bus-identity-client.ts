import type { NatsConnection } from '@nats-io/nats-core';
import { busIdentityAnswerSchema, busIdentityToolSubject, moduleBusIdentitySchema, type ModuleBusIdentity } from '../domain/bus/module-identity.js';
import { Refusal } from '../domain/refusal.js';
import { UnavailableError } from '../errors.js';
import { identityFromSeed, nkeyOf } from './identity.js';
import { fromBase64 } from './key-files.js';
import { open } from './sealing.js';

// The agent's half of a module's bus identity: it asks the controller's `bus-identity` tool over
// its own connection and opens the answer with the key it enrolled with. What it gets is checked
// before it is believed: sealed to this node, about the module asked for, and a seed that is the
// key the server knows (`nkey`).

export interface BusIdentityAsk {
  node: string;
  module: string;
  /** the subject prefix of the mesh's tools: `mesh` */
  prefix: string;
  /** the node's tweetnacl box secret key (enrolment-client.ts nodeIdentity) */
  sealingSecretKey: string;
  timeoutMs?: number;
}

/** The module's identity, or a Refusal (the controller said no; the answer did not add up) or an UnavailableError (nobody answered). */
export const askBusIdentity = async (nc: NatsConnection, ask: BusIdentityAsk): Promise<ModuleBusIdentity> => {
  const handingOut = `handing out the bus identity of ${ask.module} on ${ask.node}`;
  const opening = `opening the bus identity of ${ask.module} on ${ask.node}`;
  let reply;
  try {
    reply = await nc.request(busIdentityToolSubject(ask.prefix), JSON.stringify({ node: ask.node, module: ask.module }), { timeout: ask.timeoutMs ?? 5_000 });
  } catch (cause) {
    throw new UnavailableError(`no controller answered: ${(cause as Error).message}`, { node: ask.node, module: ask.module }, { cause });
  }
  const answer = busIdentityAnswerSchema.safeParse(JSON.parse(reply.string()));
  if (!answer.success) throw new Refusal(opening, [{ what: 'answer', why: `not a bus identity answer: ${answer.error.issues[0]?.message ?? 'invalid'}`, remedy: 'run a controller of the same version as the agent' }]);
  if (!answer.data.ok) throw new Refusal(handingOut, answer.data.refused);
  const opened = open(answer.data.sealed, ask.sealingSecretKey);
  if (opened === undefined) throw new Refusal(opening, [{ what: 'answer', why: "it is not sealed to this node's key", remedy: 'check that this agent runs with the state folder it enrolled with' }]);
  const identity = moduleBusIdentitySchema.safeParse(JSON.parse(opened));
  if (!identity.success) throw new Refusal(opening, [{ what: 'answer', why: `the sealed identity is not one: ${identity.error.issues[0]?.message ?? 'invalid'}`, remedy: 'run a controller of the same version as the agent' }]);
  const { node, module, nkey, seed } = identity.data;
  if (node !== ask.node || module !== ask.module) throw new Refusal(opening, [{ what: 'answer', why: `it is the identity of ${module} on ${node}`, remedy: 'ask again' }]);
  if (nkeyOf(identityFromSeed(fromBase64(seed)).publicKey) !== nkey) throw new Refusal(opening, [{ what: 'answer', why: 'its seed is not the key it names', remedy: 'ask again' }]);
  return identity.data;
};
