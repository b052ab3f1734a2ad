import type { MsgHdrs } from '@nats-io/nats-core';
import { verifyBytes } from '../adapters/identity.js';
import { nodeNamed } from '../domain/nodes/state.js';
import type { MeshState } from '../domain/mesh/state.js';
import { SIGNATURE_HEADER, signedBytes, type SignedKind } from '../domain/reports/signature.js';
import { refuseImpersonation, type SpeakerFindings } from './speaker.js';

// The fence in front of the report ingester (docs/decisions.md, "A report counts only when its node
// signed it"). The subject `mesh.control.<node>.report` / `.alive` names the node, but on
// nats-server 2.9 the server itself can be made to publish there (an aimed JetStream answer or
// delivery), so the subject is a claim, not a proof: a message counts only when it carries the
// signature of the node's bus key, as the controller's fold holds it (the node's enrolment). One
// that does not is a refusal named like any impersonation (speaker.ts): a log line and a metric,
// never a commit, and nothing it says is read.

export interface SignedMessage {
  subject: string;
  data: Uint8Array;
  headers?: MsgHdrs | undefined;
}

/** Why `message` is not `node`'s own signed word, or undefined when it is. */
export const unsignedBecause = (kind: SignedKind, node: string, message: SignedMessage, state: MeshState): string | undefined => {
  const busKey = nodeNamed(state.nodes, node)?.busKey;
  if (!busKey) return `node ${node} has no bus key enrolled to check a signature with`;
  const signature = message.headers?.get(SIGNATURE_HEADER) ?? '';
  if (signature === '') return `no ${SIGNATURE_HEADER} header`;
  if (!verifyBytes(busKey, signedBytes(kind, message.data), signature)) return `the ${SIGNATURE_HEADER} header is not node ${node}'s signature of this ${kind}`;
  return undefined;
};

/**
 * True when `message` on `node`'s control subject is signed by `node`; otherwise the refusal is
 * made (warning and counter) and false returned: the caller acts on nothing it says.
 */
export const signedByItsNode = (findings: SpeakerFindings | undefined, kind: SignedKind, node: string, message: SignedMessage, state: MeshState): boolean => {
  const why = unsignedBecause(kind, node, message, state);
  if (why === undefined) return true;
  refuseImpersonation(findings, { entry: kind, identity: `whoever published on ${message.subject}`, claimed: `node ${node}`, field: `${SIGNATURE_HEADER} (${why})` });
  return false;
};
