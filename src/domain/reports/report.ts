import { z } from 'zod';
import { ARTIFACT_MAX, boundedName, DIGEST_MAX, boundedReason, CAPABILITIES_MAX, capabilityName, REPORT_RESOURCES_MAX, REPORT_RUNNING_MAX, RESOURCE_KEY_MAX } from './bounds.js';

// What a node agent says after every apply, on `mesh.control.<node>.report` (stream CONTROL, read
// only by the controller). Every resource the declaration sent has exactly one outcome, so a
// report adds up: sent = applied + held + refused (+ crash-looping, which was applied and keeps
// failing). Every field is bounded (bounds.ts): whatever a node says may become a commit of the log.

export const resourceOutcome = z.strictObject({
  key: z.string().min(1).max(RESOURCE_KEY_MAX),
  module: boundedName,
  kind: boundedName,
  outcome: z.enum(['applied', 'held', 'refused', 'crash-looping']),
  /** the reason exactly as the agent gave it (held, refused, crash-looping) */
  reason: boundedReason.nullable(),
  /** restarts counted while crash-looping */
  restarts: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER).nullable(),
});

export const reportSchema = z.strictObject({
  node: boundedName,
  /** the declaration this report is about */
  sequence: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
  /** the declaration's digest (declaration.ts: `sha256:<64 hex>`; whatever a declaration it refused carried) */
  digest: z.string().max(DIGEST_MAX),
  /** when the agent finished applying, ISO 8601 */
  at: z.iso.datetime({ offset: true }),
  resources: z.array(resourceOutcome).max(REPORT_RESOURCES_MAX),
  /** what now runs: one entry per assignment whose resources all applied */
  running: z
    .array(z.strictObject({ module: boundedName, definitionVersion: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER), artifact: z.string().max(ARTIFACT_MAX).nullable() }))
    .max(REPORT_RUNNING_MAX),
  /** set when the agent refused the declaration as a whole (e.g. a sequence lower than one applied) */
  refusal: boundedReason.nullable(),
});

export type Report = z.infer<typeof reportSchema>;
export type ResourceOutcome = z.infer<typeof resourceOutcome>;

export const reportSubject = (node: string, prefix = 'mesh'): string => `${prefix}.control.${node}.report`;
export const aliveSubject = (node: string, prefix = 'mesh'): string => `${prefix}.control.${node}.alive`;

/**
 * What a node says on `mesh.control.<node>.alive` (core NATS, never kept). Read leniently: a field
 * it does not know is no reason to miss that the node is alive. `capabilities` is the resource
 * kinds beyond every agent's that it applies (declarations/capabilities.ts); an agent older than
 * them sends none. Capabilities are names of a closed grammar, a few of them (bounds.ts); the whole
 * message is bounded by its size before it is parsed.
 */
export const heartbeatSchema = z.object({
  node: boundedName,
  capabilities: z.array(capabilityName).max(CAPABILITIES_MAX, `at most ${CAPABILITIES_MAX} capabilities`).optional(),
});
