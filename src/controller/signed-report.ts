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

/** The start of the reason given when the fold holds no bus key for the node (yet). */
export const NO_BUS_KEY = 'no bus key enrolled';

/** Why `message` is not `node`'s own signed word, or undefined when it is. */
export const unsignedBecause = (kind: SignedKind, node: string, message: SignedMessage, state: MeshState): string | undefined => {
  const busKey = nodeNamed(state.nodes, node)?.busKey;
  if (!busKey) return `${NO_BUS_KEY} for node ${node} to check a signature with`;
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

/**
 * How many times a report is read for a node whose bus key the fold does not hold: a node enrolled
 * a moment ago may report before this controller's fold has read its enrolment, so its report is
 * handed back a few times (a second apart) before it is refused for good.
 */
export const KEYLESS_DELIVERIES = 5;

/**
 * A report read from CONTROL: `counts` when its node signed it; `later` when the fold holds no key
 * for its node yet and it has been read fewer than KEYLESS_DELIVERIES times; otherwise `refused`,
 * the refusal made (signedByItsNode).
 */
export const judgeReportSignature = (findings: SpeakerFindings | undefined, node: string, message: SignedMessage & { info: { deliveryCount: number } }, state: MeshState): 'counts' | 'later' | 'refused' => {
  const why = unsignedBecause('report', node, message, state);
  if (why === undefined) return 'counts';
  if (why.startsWith(NO_BUS_KEY) && message.info.deliveryCount < KEYLESS_DELIVERIES) return 'later';
  return signedByItsNode(findings, 'report', node, message, state) ? 'counts' : 'refused';
};
