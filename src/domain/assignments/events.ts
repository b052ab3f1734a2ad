import { z } from 'zod';
import { defineEvent } from '../events/registry.js';
import { assignmentRef } from '../seats/events.js';

// assignment.<node>.<module>: a module on a node (ADR 0115: the pair is the identity), how each of
// its requirements was answered, and the seats it holds and releases.

export const assignmentAggregate = (node: string, module: string): string => `assignment.${node}.${module}`;

const answer = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('assignment'), node: z.string(), module: z.string(), via: z.enum(['seat', 'pin', 'local', 'only']), seat: z.string().optional() }),
  z.strictObject({ kind: z.literal('directory'), path: z.string(), placed: z.boolean() }),
  z.strictObject({ kind: z.literal('port'), port: z.number().int() }),
  z.strictObject({ kind: z.literal('fact'), fact: z.string() }),
  z.strictObject({ kind: z.literal('identity'), node: z.string(), module: z.string(), name: z.string() }),
  z.strictObject({ kind: z.literal('value'), value: z.union([z.string(), z.number(), z.boolean()]), from: z.enum(['assignment', 'default']) }),
  /** a secret is named and answered by the vault's holder; its value never enters the log */
  z.strictObject({ kind: z.literal('secret'), name: z.string(), seat: z.string(), holder: assignmentRef }),
]);

export const resolutionSchema = z.strictObject({
  requirement: z.string().min(1),
  contract: z.string().min(1),
  provider: z.enum(['module', 'host', 'mesh', 'operator']),
  answer,
});

export type Resolution = z.infer<typeof resolutionSchema>;
export type Answer = Resolution['answer'];

export const AssignmentCreated = defineEvent({
  type: 'assignment.created',
  version: 1,
  schema: z.strictObject({
    module: z.string().min(1),
    node: z.string().min(1),
    definitionVersion: z.number().int().positive(),
    resolutions: z.array(resolutionSchema),
    pins: z.record(z.string(), assignmentRef),
    values: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
    placements: z.record(z.string(), z.string()),
  }),
});

export const SeatHeld = defineEvent({
  type: 'seat.held',
  version: 1,
  schema: z.strictObject({ seat: z.string().min(1), scopeKey: z.string().min(1), node: z.string().min(1), module: z.string().min(1) }),
});

export const AssignmentRemoved = defineEvent({
  type: 'assignment.removed',
  version: 1,
  schema: z.strictObject({ module: z.string().min(1), node: z.string().min(1) }),
});

export const SeatReleased = defineEvent({
  type: 'seat.released',
  version: 1,
  schema: z.strictObject({ seat: z.string().min(1), scopeKey: z.string().min(1), node: z.string().min(1), module: z.string().min(1) }),
});

export const assignmentEvents = [AssignmentCreated, SeatHeld, AssignmentRemoved, SeatReleased] as const;
