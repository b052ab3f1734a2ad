import { z } from 'zod';
import { canonicalJson } from '../canonical.js';

// A command as an operator sends it: what to do, who asks, when, and the operator's ed25519
// signature over exactly those. The controller verifies it against the key the log holds for the
// operator before deciding anything; the log keeps it with the events it caused.

export const signedCommandSchema = z.strictObject({
  commandId: z.string().min(1),
  operator: z.string().min(1),
  /** the command itself: `{ type, … }` as MeshCommand */
  command: z.record(z.string(), z.unknown()),
  /** when the operator signed it, ISO 8601 */
  time: z.string(),
  /** base64 ed25519 signature over signedBytes(commandId, operator, command, time) */
  signature: z.string().min(1),
});

export type SignedCommand = z.infer<typeof signedCommandSchema>;

/** Exactly what is signed: a canonical encoding, so key order never breaks a signature. */
export const signedBytes = (signed: Omit<SignedCommand, 'signature'>): Uint8Array =>
  new TextEncoder().encode(canonicalJson({ commandId: signed.commandId, operator: signed.operator, command: signed.command, time: signed.time }));
