import { z } from 'zod';
import type { Decision } from '../decision.js';
import { defineEvent } from '../events/registry.js';
import type { MeshState } from '../mesh/state.js';
import { allOperators, operatorNamed } from './state.js';
import { refuseIfAny, type Problem } from '../refusal.js';

// Operators are told apart by the keys they sign with (ed25519): the mesh keeps each operator's
// public key; the private key never leaves the operator's own file.

export const operatorAggregate = (name: string): string => `operator.${name}`;

export const OperatorAdded = defineEvent({
  type: 'operator.added',
  version: 1,
  schema: z.strictObject({ operator: z.string().min(1), publicKey: z.string().min(1) }),
});

export const OperatorRevoked = defineEvent({
  type: 'operator.revoked',
  version: 1,
  schema: z.strictObject({ operator: z.string().min(1) }),
});

export const operatorEvents = [OperatorAdded, OperatorRevoked] as const;

export const addOperatorSchema = z.strictObject({ type: z.literal('add-operator'), operator: z.string(), publicKey: z.string() });
export type AddOperator = z.infer<typeof addOperatorSchema>;

export const revokeOperatorSchema = z.strictObject({ type: z.literal('revoke-operator'), operator: z.string() });
export type RevokeOperator = z.infer<typeof revokeOperatorSchema>;

const OPERATOR_NAME_MAX = 63;
const ED25519_PUBLIC_KEY = /^[A-Za-z0-9+/]{43}=$/;

export const decideAddOperator = (command: AddOperator, state: MeshState): Decision => {
  const problems: Problem[] = [];
  if (command.operator.length > OPERATOR_NAME_MAX) {
    problems.push({ what: command.operator.slice(0, 40), why: `an operator name is at most ${OPERATOR_NAME_MAX} characters, and this one has ${command.operator.length}: it names the operator in every command's actor and in the log's subject operator.<name>`, remedy: 'choose a shorter name' });
  } else if (!/^[a-z][a-z0-9._-]*$/.test(command.operator)) problems.push({ what: command.operator, why: 'an operator name is lower-case letters, digits, ., _ and -', remedy: 'choose another name' });
  if (!ED25519_PUBLIC_KEY.test(command.publicKey)) problems.push({ what: 'publicKey', why: 'not an ed25519 public key in base64', remedy: 'give the public half of the operator’s signing key' });
  const existing = operatorNamed(state.operators, command.operator);
  if (existing) problems.push({ what: command.operator, why: existing.revoked ? `operator ${command.operator} was revoked` : `operator ${command.operator} exists`, remedy: 'choose another name' });
  refuseIfAny(`adding operator ${command.operator}`, problems);
  return { aggregate: operatorAggregate(command.operator), events: [{ type: OperatorAdded.type, data: { operator: command.operator, publicKey: command.publicKey } }], summary: `operator ${command.operator} added` };
};

export const decideRevokeOperator = (command: RevokeOperator, state: MeshState): Decision => {
  const existing = operatorNamed(state.operators, command.operator);
  const problems: Problem[] = [];
  if (!existing) problems.push({ what: command.operator, why: 'no such operator', remedy: `operators: ${[...allOperators(state.operators)].map((o) => o.operator).join(', ') || 'none'}`, missing: 'operator' });
  else if (existing.revoked) problems.push({ what: command.operator, why: `operator ${command.operator} is already revoked`, remedy: 'nothing to do' });
  const active = [...allOperators(state.operators)].filter((o) => !o.revoked && o.operator !== command.operator);
  if (existing && !existing.revoked && active.length === 0) problems.push({ what: command.operator, why: 'it is the last operator who is not revoked: nobody could command the mesh after it', remedy: 'add another operator first' });
  refuseIfAny(`revoking operator ${command.operator}`, problems);
  return { aggregate: operatorAggregate(command.operator), events: [{ type: OperatorRevoked.type, data: { operator: command.operator } }], summary: `operator ${command.operator} revoked` };
};
