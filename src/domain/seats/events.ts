import { z } from 'zod';
import { defineEvent } from '../events/registry.js';

// seat.<id>: a seat's life. The id is stable (the seat's first name); its name is a label that
// renames move, leaving the old one as an alias (ADR 0122).

export const seatAggregate = (seatId: string): string => `seat.${seatId}`;

export const assignmentRef = z.strictObject({ node: z.string().min(1), module: z.string().min(1) });
export type AssignmentRef = z.infer<typeof assignmentRef>;

export const seatProtocol = z.strictObject({
  accepts: z.array(z.strictObject({ verb: z.string(), retain: z.string() })),
  emits: z.array(z.string()),
  serves: z.array(z.string()),
});

export const SeatDefined = defineEvent({
  type: 'seat.defined',
  version: 1,
  schema: z.strictObject({
    seat: z.string().min(1),
    name: z.string().min(1),
    scope: z.enum(['mesh', 'node']),
    delivers: z.string().nullable(),
    reserved: z.boolean(),
    /** the record that made it a seat */
    decided: z.string().min(1),
    protocol: seatProtocol,
  }),
});

export const SeatRenamed = defineEvent({
  type: 'seat.renamed',
  version: 1,
  schema: z.strictObject({ seat: z.string().min(1), from: z.string().min(1), to: z.string().min(1) }),
});

/** One event: the seat is never unheld between the two holders (ADR 0131). */
export const SeatHandedOver = defineEvent({
  type: 'seat.handed-over',
  version: 1,
  schema: z.strictObject({
    seat: z.string().min(1),
    scopeKey: z.string().min(1),
    from: assignmentRef.nullable(),
    to: assignmentRef,
  }),
});

export const seatEvents = [SeatDefined, SeatRenamed, SeatHandedOver] as const;
