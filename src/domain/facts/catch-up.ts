import { z } from 'zod';

// The mesh-controller seat's `catch-up` tool on the wire: "every fact after position P", answered
// in pages in the reply itself. A replay is an answer to one asker, never a publication: nothing
// is appended to the log or put on EVENTS, so no other consumer (the build recorder, a catalogue)
// can take a replayed fact or build for a new one.

/** A fact's place in the log: its commit's sequence and its index in that commit. */
export const positionSchema = z.strictObject({ seq: z.number().int().nonnegative(), index: z.number().int().nonnegative() });
export type FactPosition = z.infer<typeof positionSchema>;

/** Before every fact: a consumer that has seen nothing asks from here. */
export const START: FactPosition = { seq: 0, index: 0 };

export const catchUpRequestSchema = z.strictObject({
  /** who asks, for the controller's log */
  asker: z.string().min(1).max(200),
  /** the last position the asker holds: facts strictly after it are answered */
  after: positionSchema,
  limit: z.number().int().positive().max(1_000).optional(),
});
export type CatchUpRequest = z.infer<typeof catchUpRequestSchema>;

export interface CatchUpPage<Fact = unknown> {
  ok: true;
  facts: Fact[];
  /** where the next page starts (the last fact's position, or `after` when there were none) */
  next: FactPosition;
  /** more facts may follow this page: ask again from `next` */
  more: boolean;
  /** the log's head before this page was read: with `more` false, every fact up to it was answered */
  head: number;
  /** fact commits an operator voided, passed by in this page: a reader is told, never left to guess */
  passed?: { seq: number; aggregate: string; reason: string; voidSeq: number; actor: string }[];
}

export const catchUpToolSubject = (prefix = 'mesh'): string => `${prefix}.seat.mesh-controller.tool.catch-up`;

export const isAfter = (a: FactPosition, b: FactPosition): boolean => a.seq > b.seq || (a.seq === b.seq && a.index > b.index);
