import { headers as natsHeaders, type MsgHdrs } from '@nats-io/nats-core';
import { signBytes, verifyBytes, type Identity } from './identity.js';

// A node applies only a declaration the controller signed for it (docs/decisions.md). NODES is
// not only the controller's: nats-server 2.9 lets anyone who may send a JetStream request aim the
// answer or a delivery at a node's declaration subject, and the stream captures it. So the
// controller signs the exact bytes it publishes with its ed25519 key (the one that signs the
// log's commits), domain-separated so that no other signature of the controller's — a commit's,
// a tool answer's — can be passed off as a declaration's:
//
//   sig = ed25519("mesh declaration v1" ‖ 0x00 ‖ body)
//
// The signature travels in a header beside the unchanged body: the declaration's schema and digest
// are what they were. The body names its node, so a declaration signed for alpha and aimed at
// beta's subject verifies, and is refused by beta for naming alpha (the agent checks both).

export const DECLARATION_SIGNATURE_HEADER = 'Mesh-Declaration-Signature';

const CONTEXT = Buffer.from('mesh declaration v1\0');

const signed = (body: Uint8Array): Uint8Array => Buffer.concat([CONTEXT, body]);

/** base64 ed25519 signature of a declaration's published bytes */
export const signDeclaration = (controller: Pick<Identity, 'secretKey'>, body: Uint8Array): string => signBytes(controller, signed(body));

/** Whether `signature` is the controller's over exactly `body`. */
export const declarationSignatureHolds = (controllerKey: string, body: Uint8Array, signature: string): boolean => verifyBytes(controllerKey, signed(body), signature);

/** The headers a declaration is published with. */
export const declarationHeaders = (controller: Pick<Identity, 'secretKey'>, body: Uint8Array): MsgHdrs => {
  const headers = natsHeaders();
  headers.set(DECLARATION_SIGNATURE_HEADER, signDeclaration(controller, body));
  return headers;
};

/**
 * Why a message on a node's declaration subject is not the controller's, or undefined when its
 * signature holds under `controllerKey`. Checked before the body is read any further.
 */
export const declarationSignatureProblem = (controllerKey: string, body: Uint8Array, signature: string | undefined): string | undefined => {
  if (!signature) return `not signed by the controller: it carries no ${DECLARATION_SIGNATURE_HEADER}`;
  if (!declarationSignatureHolds(controllerKey, body, signature)) return "not signed by the controller: its signature does not verify under the controller's key";
  return undefined;
};
