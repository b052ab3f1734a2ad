import { z } from 'zod';
import { defineEvent } from '../events/registry.js';

// What machines are doing, stated by the control plane under the mesh-controller seat (ADR 0134):
// derived from node reports, appended to the log on change only, and published on
// `mesh.seat.mesh-controller.event.<applied|refused|crash-looping|stopped|held|report-mismatch|capabilities>`.

export const factAggregate = (node: string): string => `fact.${node}`;

const version = z.strictObject({ definitionVersion: z.number().int(), artifact: z.string().nullable() });
export type RunningVersion = z.infer<typeof version>;

const where = { node: z.string().min(1), module: z.string().min(1), declarationSequence: z.number().int().nonnegative() };

export const FactApplied = defineEvent({
  type: 'fact.applied',
  version: 1,
  schema: z.strictObject({ ...where, version, previous: version.nullable() }),
});

export const FactRefused = defineEvent({
  type: 'fact.refused',
  version: 1,
  schema: z.strictObject({ ...where, version, resource: z.string().min(1), kind: z.string(), reason: z.string() }),
});

export const FactCrashLooping = defineEvent({
  type: 'fact.crash-looping',
  version: 1,
  schema: z.strictObject({ ...where, version, resource: z.string().min(1), restarts: z.number().int().nonnegative(), reason: z.string() }),
});

export const FactStopped = defineEvent({
  type: 'fact.stopped',
  version: 1,
  schema: z.strictObject({ ...where, previous: version }),
});

/** One held resource: its key, its kind and the reason exactly as the node gave it. */
const heldResource = z.strictObject({ resource: z.string().min(1), kind: z.string(), reason: z.string().nullable() });
export type HeldResource = z.infer<typeof heldResource>;

/**
 * What a node holds of one module and why, as the node gave it: the module's whole set of held
 * resources, stated when that set changes (a resource held or no longer held, a reason changed).
 * An empty set says the hold has ended. The newest `fact.held` of a module is therefore the hold
 * as it stands, and a follower needs this one subject to know it.
 */
export const FactHeld = defineEvent({
  type: 'fact.held',
  version: 1,
  schema: z.strictObject({ ...where, resources: z.array(heldResource) }),
});

/** A report that does not add up: what was sent is not what was answered for. */
export const FactReportMismatch = defineEvent({
  type: 'fact.report-mismatch',
  version: 1,
  schema: z.strictObject({
    node: z.string().min(1),
    declarationSequence: z.number().int().nonnegative(),
    sent: z.number().int(),
    answered: z.number().int(),
    missing: z.array(z.string()),
    unexpected: z.array(z.string()),
  }),
});

/**
 * The resource kinds a node's agent says it applies beyond those every agent has (its heartbeat
 * carries them), stated when they change. A kind not stated is not sent to the node: its
 * declaration is withheld, named (declarations/capabilities.ts).
 */
export const FactCapabilities = defineEvent({
  type: 'fact.capabilities',
  version: 1,
  schema: z.strictObject({ node: z.string().min(1), capabilities: z.array(z.string().min(1)) }),
});

export const factEvents = [FactApplied, FactRefused, FactCrashLooping, FactStopped, FactHeld, FactReportMismatch, FactCapabilities] as const;

/** The seat event subject a fact is published on. */
export const factSubject = (type: string, prefix = 'mesh'): string => `${prefix}.seat.mesh-controller.event.${type.replace(/^fact\./, '')}`;
