import { z } from 'zod';
import { canonicalJson } from '../canonical.js';

// A command as an operator sends it: what to do, who asks, when, what the signature is for, and
// the operator's ed25519 signature over exactly those. The controller verifies it against the key
// the log holds for the operator before deciding anything; the log keeps it with the events it
// caused.
//
// `purpose` separates a signature made to carry a command out from one made to plan it (`mesh …
// --plan`): it is part of the signed bytes, so a plan's signature never verifies as the verb's,
// nor the verb's as a plan's. Commands signed before it existed have no `purpose`; the log keeps
// them and `mesh audit verify` still checks them under that old form, but the controller refuses
// a new command in it (entry-checks.ts).

/** What a signature is for: carrying the command out, or only planning it (nothing appended). */
export const SIGNED_FOR = ['carry-out', 'plan'] as const;
export type SignedFor = (typeof SIGNED_FOR)[number];

export const signedCommandSchema = z.strictObject({
  commandId: z.string().min(1),
  operator: z.string().min(1),
  /** the command itself: `{ type, … }` as MeshCommand */
  command: z.record(z.string(), z.unknown()),
  /** when the operator signed it, ISO 8601 */
  time: z.string(),
  /** what the signature is for; absent only in commands signed before it was part of the signed bytes */
  purpose: z.enum(SIGNED_FOR).optional(),
  /** base64 ed25519 signature over signedBytes(commandId, operator, command, time[, purpose]) */
  signature: z.string().min(1),
});

export type SignedCommand = z.infer<typeof signedCommandSchema>;

/**
 * Exactly what is signed: a canonical encoding, so key order never breaks a signature. With a
 * purpose, the purpose is signed too; without one, the bytes are those of the old form, as the log
 * keeps its commands (and never equal to a new form's, whose keys differ).
 */
export const signedBytes = (signed: Omit<SignedCommand, 'signature'>): Uint8Array =>
  new TextEncoder().encode(
    canonicalJson(
      signed.purpose === undefined
        ? { commandId: signed.commandId, operator: signed.operator, command: signed.command, time: signed.time }
        : { commandId: signed.commandId, operator: signed.operator, command: signed.command, time: signed.time, purpose: signed.purpose },
    ),
  );
