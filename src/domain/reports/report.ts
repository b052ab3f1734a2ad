import { z } from 'zod';

// What a node agent says after every apply, on `mesh.control.<node>.report` (stream CONTROL, read
// only by the controller). Every resource the declaration sent has exactly one outcome, so a
// report adds up: sent = applied + held + refused (+ crash-looping, which was applied and keeps
// failing).

export const resourceOutcome = z.strictObject({
  key: z.string().min(1),
  module: z.string().min(1),
  kind: z.string().min(1),
  outcome: z.enum(['applied', 'held', 'refused', 'crash-looping']),
  /** the reason exactly as the agent gave it (held, refused, crash-looping) */
  reason: z.string().nullable(),
  /** restarts counted while crash-looping */
  restarts: z.number().int().nonnegative().nullable(),
});

export const reportSchema = z.strictObject({
  node: z.string().min(1),
  /** the declaration this report is about */
  sequence: z.number().int().nonnegative(),
  digest: z.string(),
  /** when the agent finished applying, ISO 8601 */
  at: z.string(),
  resources: z.array(resourceOutcome),
  /** what now runs: one entry per assignment whose resources all applied */
  running: z.array(z.strictObject({ module: z.string(), definitionVersion: z.number().int(), artifact: z.string().nullable() })),
  /** set when the agent refused the declaration as a whole (e.g. a sequence lower than one applied) */
  refusal: z.string().nullable(),
});

export type Report = z.infer<typeof reportSchema>;
export type ResourceOutcome = z.infer<typeof resourceOutcome>;

export const reportSubject = (node: string, prefix = 'mesh'): string => `${prefix}.control.${node}.report`;
export const aliveSubject = (node: string, prefix = 'mesh'): string => `${prefix}.control.${node}.alive`;

/**
 * What a node says on `mesh.control.<node>.alive` (core NATS, never kept). Read leniently: a field
 * it does not know is no reason to miss that the node is alive. `capabilities` is the resource
 * kinds beyond every agent's that it applies (declarations/capabilities.ts); an agent older than
 * them sends none.
 */
export const heartbeatSchema = z.object({
  node: z.string().min(1),
  capabilities: z.array(z.string().min(1)).optional(),
});
