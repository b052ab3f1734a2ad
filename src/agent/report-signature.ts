import { headers, type MsgHdrs } from '@nats-io/nats-core';
import { signBytes, type Identity } from '../adapters/identity.js';
import { SIGNATURE_HEADER, signedBytes, type SignedKind } from '../domain/reports/signature.js';

// What a node says to the control plane is signed with its host key over the exact bytes it
// publishes (domain/reports/signature.ts); the controller acts on nothing else. Anything that
// publishes a report or a heartbeat for a node — the agent, and tests and probes standing in for
// one — makes its headers here.

/** The body's bytes as they go on the wire, and the headers that carry their signature. */
export interface Signed {
  body: Uint8Array;
  headers: MsgHdrs;
}

export const signedMessage = (kind: SignedKind, key: Pick<Identity, 'secretKey'>, body: string | Uint8Array): Signed => {
  const bytes = typeof body === 'string' ? new TextEncoder().encode(body) : body;
  const signed = headers();
  signed.set(SIGNATURE_HEADER, signBytes(key, signedBytes(kind, bytes)));
  return { body: bytes, headers: signed };
};

/** A report's signature headers, for `bytes` exactly as published. */
export const signedReportHeaders = (key: Pick<Identity, 'secretKey'>, bytes: Uint8Array): MsgHdrs => signedMessage('report', key, bytes).headers;

/** A heartbeat's signature headers, for `bytes` exactly as published. */
export const signedHeartbeatHeaders = (key: Pick<Identity, 'secretKey'>, bytes: Uint8Array): MsgHdrs => signedMessage('heartbeat', key, bytes).headers;
