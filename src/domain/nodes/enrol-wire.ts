import { z } from 'zod';

// The enrolment tool's request and answer on `<prefix>.seat.mesh-controller.tool.enrol` (core
// request/reply, never persisted: what it carries back is sealed to the agent's key).

export const enrolToolSubject = (prefix = 'mesh'): string => `${prefix}.seat.mesh-controller.tool.enrol`;

export const enrolRequestSchema = z.strictObject({
  node: z.string().min(1),
  /** `<tokenId>.<secret>` as the operator was given it */
  token: z.string().regex(/^[0-9a-f]{16}\.[A-Za-z0-9_-]+$/, 'a token is <id>.<secret>, as `mesh node token` printed it'),
  /** the agent's tweetnacl box public key, base64 */
  publicKey: z.string().min(1),
});

export const sealedSchema = z.strictObject({ nonce: z.string(), senderPublicKey: z.string(), box: z.string() });

export const enrolAnswerSchema = z.union([
  z.strictObject({ ok: z.literal(true), node: z.string(), seq: z.number().int(), credentials: sealedSchema }),
  z.strictObject({ ok: z.literal(false), refused: z.array(z.strictObject({ what: z.string(), why: z.string(), remedy: z.string() })) }),
]);

/** What an enrolled node receives, sealed: how it reaches the bus as itself. */
export const busCredentialsSchema = z.strictObject({ url: z.string(), user: z.string(), password: z.string(), node: z.string() });

export type EnrolRequest = z.infer<typeof enrolRequestSchema>;
export type EnrolAnswer = z.infer<typeof enrolAnswerSchema>;
export type BusCredentials = z.infer<typeof busCredentialsSchema>;
