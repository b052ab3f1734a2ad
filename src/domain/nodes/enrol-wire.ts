import { z } from 'zod';

// The enrolment tool's request and answer on `<prefix>.seat.mesh-controller.tool.enrol` (core
// request/reply, never persisted). The joining agent asks as the token's own bus identity, the
// only one allowed to publish there, and names the two keys it made: one to seal to, one to be
// on the bus as. Nothing secret comes back: the node's bus user is its own key's public half.

export const enrolToolSubject = (prefix = 'mesh'): string => `${prefix}.seat.mesh-controller.tool.enrol`;

const ED25519_PUBLIC_KEY = z.string().regex(/^[A-Za-z0-9+/]{43}=$/, 'a 32-byte ed25519 public key in base64');

export const enrolRequestSchema = z.strictObject({
  node: z.string().min(1),
  /** `<tokenId>.<secret>` as the operator was given it */
  token: z.string().regex(/^[0-9a-f]{16}\.[A-Za-z0-9_-]+$/, 'a token is <id>.<secret>, as `mesh node token` printed it'),
  /** the agent's tweetnacl box public key, base64 */
  publicKey: z.string().min(1),
  /** the host's ed25519 identity key, base64: the node's user on the bus once enrolled */
  busKey: z.string().regex(/^[A-Za-z0-9+/]{43}=$/, 'busKey is a 32-byte ed25519 public key in base64'),
});

export const enrolAnswerSchema = z.union([
  z.strictObject({
    ok: z.literal(true),
    node: z.string(),
    seq: z.number().int(),
    /** the controller's ed25519 public key, base64: the node applies only declarations signed with it (absent from a controller older than signed declarations) */
    controllerKey: ED25519_PUBLIC_KEY.optional(),
  }),
  z.strictObject({ ok: z.literal(false), refused: z.array(z.strictObject({ what: z.string(), why: z.string(), remedy: z.string() })) }),
]);

export type EnrolRequest = z.infer<typeof enrolRequestSchema>;
export type EnrolAnswer = z.infer<typeof enrolAnswerSchema>;
