import { z } from 'zod';
import { defineEvent } from '../events/registry.js';

// A declaration that could not be composed is not sent (the node's previous one stands); the
// control plane states why, once per distinct reason.

export const DeclarationRefused = defineEvent({
  type: 'declaration.refused',
  version: 1,
  schema: z.strictObject({
    node: z.string().min(1),
    /** the log sequence the composition was attempted at */
    derivedFromSeq: z.number().int().nonnegative(),
    /** digest of the problems: the same reason is stated once */
    reason: z.string(),
    unresolved: z.array(z.strictObject({ what: z.string(), why: z.string(), remedy: z.string() })),
  }),
});

export const declarationEvents = [DeclarationRefused] as const;

/**
 * Whether a refusal has been overcome: a declaration composed from a later log sequence than the
 * refused attempt has been published since. A publisher never publishes a declaration derived
 * earlier than the one it holds, so the newest published one answers for every attempt before it.
 * The one comparison every reader of refusals makes (the overview, `mesh status`).
 */
export const refusalOvercome = (refusal: { derivedFromSeq: number }, published: { derivedFromSeq: number } | null | undefined): boolean =>
  published !== null && published !== undefined && published.derivedFromSeq > refusal.derivedFromSeq;
