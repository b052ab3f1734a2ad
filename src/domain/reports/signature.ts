// A report or heartbeat counts only when its node signed it (docs/decisions.md, "A report counts
// only when its node signed it"). On nats-server 2.9 any identity that may send a JetStream API
// request can aim the server's answer or a consumer's deliveries at any subject of the account,
// `mesh.control.<node>.report` among them: the subject alone does not prove the node published.
// So the agent signs the exact bytes it publishes with its host key (its identity on the bus), the
// signature in a header so the report's schema is unchanged, and the controller checks it against
// the node's enrolled bus key. The context separates the two kinds: a heartbeat's signature can
// never pass for a report's, nor either for any other signature the host key makes.

/** The NATS header the signature travels in: base64 ed25519 over `signedBytes(kind, body)`. */
export const SIGNATURE_HEADER = 'Mesh-Signature';

export type SignedKind = 'report' | 'heartbeat';

const CONTEXT: Record<SignedKind, string> = { report: 'mesh report v1', heartbeat: 'mesh heartbeat v1' };

/** What is signed: the kind's context, a NUL, then the body's bytes exactly as published. */
export const signedBytes = (kind: SignedKind, body: Uint8Array): Uint8Array => {
  const context = new TextEncoder().encode(CONTEXT[kind]);
  const bytes = new Uint8Array(context.length + 1 + body.length);
  bytes.set(context, 0);
  bytes[context.length] = 0;
  bytes.set(body, context.length + 1);
  return bytes;
};
