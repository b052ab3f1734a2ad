import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { Decision } from '../decision.js';
import { defineEvent } from '../events/registry.js';
import type { MeshState } from '../mesh/state.js';
import { enrolmentToken, nodeNamed } from './state.js';
import { nameProblem } from '../limits.js';
import { Refusal, refuseIfAny, type Problem } from '../refusal.js';
import { DEFAULT_NODE_ROOT, nodeAggregate } from './events.js';

// Joining the mesh. An operator is handed a token once; the log keeps only its id and a hash to
// verify it by (ADR 0113: the controller can only verify). An agent spends it exactly once,
// presenting the public half of a key pair it made itself; what the mesh gives back is sealed to
// that key and never enters the log.

/** 32 bytes of key, base64 */
const BASE64_KEY = /^[A-Za-z0-9+/]{43}=$/;

export const tokenAggregate = (tokenId: string): string => `token.${tokenId}`;

export const EnrolmentTokenIssued = defineEvent({
  type: 'enrolment.token-issued',
  version: 1,
  schema: z.strictObject({
    tokenId: z.string().regex(/^[0-9a-f]{16}$/),
    /** sha256 of the token's secret part */
    verifier: z.string().regex(/^[0-9a-f]{64}$/),
    /** a token may be made for one node only */
    node: z.string().nullable(),
    expiresAt: z.string(),
    /** the bus identity the token's secret derives (enrolmentIdentity): the enrolment user while the token lives */
    publicKey: z.string().regex(BASE64_KEY).optional(),
  }),
});

export const NodeEnrolled = defineEvent({
  type: 'node.enrolled',
  version: 1,
  schema: z.strictObject({
    node: z.string().min(1),
    /** the agent's public key (tweetnacl box), base64 */
    publicKey: z.string().min(1),
    tokenId: z.string().min(1),
    /** the host's ed25519 identity on the bus, base64; absent in events written before bus identities */
    busKey: z.string().regex(BASE64_KEY).optional(),
  }),
});

export const enrolmentEvents = [EnrolmentTokenIssued, NodeEnrolled] as const;

export const issueEnrolmentTokenSchema = z.strictObject({
  type: z.literal('issue-enrolment-token'),
  tokenId: z.string(),
  verifier: z.string(),
  node: z.string().nullable(),
  expiresAt: z.string(),
  /** the token's bus identity (enrolmentIdentity of its secret) */
  publicKey: z.string().optional(),
});
export type IssueEnrolmentToken = z.infer<typeof issueEnrolmentTokenSchema>;

export const enrolNodeSchema = z.strictObject({
  type: z.literal('enrol-node'),
  node: z.string(),
  tokenId: z.string(),
  /** the secret part as presented; only its hash is compared */
  secret: z.string(),
  publicKey: z.string(),
  /** the host's ed25519 public key: its identity on the bus from now on */
  busKey: z.string().optional(),
  /** the time the request arrived: deciders take no clock */
  now: z.string(),
});
export type EnrolNode = z.infer<typeof enrolNodeSchema>;

export const tokenVerifier = (secret: string): string => createHash('sha256').update(secret).digest('hex');

export const decideIssueEnrolmentToken = (command: IssueEnrolmentToken, state: MeshState): Decision => {
  const problems: Problem[] = [];
  if (enrolmentToken(state.nodes, command.tokenId)) problems.push({ what: command.tokenId, why: 'a token with this id exists', remedy: 'make another token' });
  const badNode = command.node === null ? undefined : nameProblem('node', command.node, '--node');
  if (badNode) problems.push(badNode);
  if (Number.isNaN(Date.parse(command.expiresAt))) problems.push({ what: 'expiresAt', why: `"${command.expiresAt}" is not a time`, remedy: 'send an ISO 8601 time, e.g. 2026-01-01T12:00:00Z' });
  if (command.publicKey !== undefined && !BASE64_KEY.test(command.publicKey)) problems.push({ what: 'publicKey', why: 'not a 32-byte public key in base64', remedy: 'send the public half of the identity the token derives' });
  refuseIfAny('making an enrolment token', problems);
  return {
    aggregate: tokenAggregate(command.tokenId),
    events: [
      {
        type: EnrolmentTokenIssued.type,
        data: { tokenId: command.tokenId, verifier: command.verifier, node: command.node, expiresAt: command.expiresAt, ...(command.publicKey ? { publicKey: command.publicKey } : {}) },
      },
    ],
    summary: `enrolment token ${command.tokenId} made${command.node ? ` for node ${command.node}` : ''}, valid until ${command.expiresAt}`,
  };
};

export const decideEnrolNode = (command: EnrolNode, state: MeshState): Decision => {
  const subject = `enrolling node ${command.node}`;
  const token = enrolmentToken(state.nodes, command.tokenId);
  if (!token || token.verifier !== tokenVerifier(command.secret)) {
    throw new Refusal(subject, [{ what: 'token', why: 'the token is not one the mesh made', remedy: 'ask an operator for a token: mesh node token' }]);
  }
  const problems: Problem[] = [];
  if (token.spentBy) problems.push({ what: 'token', why: `the token was already spent, by node ${token.spentBy}`, remedy: 'a token is spent once: ask for a new one' });
  if (Date.parse(command.now) > Date.parse(token.expiresAt)) problems.push({ what: 'token', why: `the token expired at ${token.expiresAt}`, remedy: 'ask for a new one' });
  if (token.retiredWith !== undefined) problems.push({ what: 'token', why: `the token was retired when node ${token.retiredWith} was removed`, remedy: 'ask for a new one' });
  if (token.node !== null && token.node !== command.node) problems.push({ what: 'token', why: `the token was made for node ${token.node}`, remedy: `enrol as ${token.node}, or ask for a token for ${command.node}` });
  const badNode = nameProblem('node', command.node, 'node');
  if (badNode) problems.push(badNode);
  if (!BASE64_KEY.test(command.publicKey)) problems.push({ what: 'publicKey', why: 'not a 32-byte public key in base64', remedy: 'send the public half of a tweetnacl box key pair' });
  if (command.busKey !== undefined && !BASE64_KEY.test(command.busKey)) problems.push({ what: 'busKey', why: 'not a 32-byte ed25519 public key in base64', remedy: "send the public half of the host's identity key" });
  const enrolled = nodeNamed(state.nodes, command.node)?.publicKey;
  if (enrolled) problems.push({ what: command.node, why: `node ${command.node} is already enrolled`, remedy: 'an enrolled node keeps its key; remove the node before enrolling a new machine under its name' });
  refuseIfAny(subject, problems);
  return {
    aggregate: nodeAggregate(command.node),
    events: [{ type: NodeEnrolled.type, data: { node: command.node, publicKey: command.publicKey, tokenId: command.tokenId, ...(command.busKey ? { busKey: command.busKey } : {}) } }],
    summary: `node ${command.node} enrolled${nodeNamed(state.nodes, command.node) ? '' : ` (added with root ${DEFAULT_NODE_ROOT})`}`,
  };
};
