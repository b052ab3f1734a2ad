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
