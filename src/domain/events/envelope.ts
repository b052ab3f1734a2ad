import { z } from 'zod';
import { signedCommandSchema, type SignedCommand } from '../operators/signed-command.js';

// One envelope for every event in the log. The log stamps id, time and schema version; the
// command's metadata brings actor, command, causation and correlation ids.

export const AGGREGATE_TOKEN = /^[A-Za-z0-9][A-Za-z0-9_-]*$/;
export const EVENT_TYPE = /^[a-z][a-z0-9-]*(\.[a-z][a-z0-9-]*)+$/;

/** `<kind>.<id…>`: the tail of the aggregate's subject, e.g. `seat.mesh-git` or `assignment.alpha.gitea`. */
export const aggregateSchema = z
  .string()
  .refine((value) => value.split('.').length >= 2 && value.split('.').every((token) => AGGREGATE_TOKEN.test(token)), {
    message: 'an aggregate is `<kind>.<id…>`: two or more dot-separated tokens of letters, digits, `-` and `_`',
  });

export const eventEnvelopeSchema = z
  .object({
    id: z.string().min(1),
    type: z.string().regex(EVENT_TYPE, 'an event type is dot-separated lower-case words, e.g. `seat.declared`'),
    schemaVersion: z.number().int().positive(),
    aggregate: aggregateSchema,
    time: z.string().datetime({ offset: true }),
    actor: z.string().min(1),
    commandId: z.string().min(1),
    causationId: z.string().min(1),
    correlationId: z.string().min(1),
    data: z.unknown(),
  })
  .strict();

/** An event as its type's schema says it is: `type` discriminates, `data` follows. */
export interface AnyEvent {
  type: string;
  data: unknown;
}

/** The envelope's fields besides the event itself: what the log stamps and the command brings. */
export type EnvelopeFields = Omit<z.infer<typeof eventEnvelopeSchema>, 'type' | 'data'>;

/** An envelope carrying one of the events `E`; a union `E` makes a union of envelopes. */
export type EventEnvelope<E extends AnyEvent = AnyEvent> = EnvelopeFields & E;

/**
 * One message in the LOG stream: every event one command decided for one aggregate. A single
 * message is the unit of atomicity on nats-server 2.9, which has no atomic batch publish.
 */
export const commitSchema = z
  .object({
    firstVersion: z.number().int().positive(),
    events: z.array(eventEnvelopeSchema).min(1),
    /** the operator's signed command these events were decided from, as it arrived: `mesh audit verify` checks it again */
    command: signedCommandSchema.optional(),
  })
  .strict();

export interface Commit {
  firstVersion: number;
  events: EventEnvelope[];
  command?: SignedCommand;
}

/** Where an event stands in the log. */
export interface EventPosition {
  /** The LOG stream sequence of the commit that holds it. */
  seq: number;
  /** Its position within that commit, from 0. */
  index: number;
  /** Its position in its aggregate, from 1, gap-free. */
  version: number;
  /** The operator's signed command that caused it, when an operator did. */
  signed?: SignedCommand;
}

/**
 * An event as read back: its envelope (upcast to the current schema, its data parsed by the
 * schema of its type) and where it stands. With `E` a union of events, switching on `type`
 * narrows `data`.
 */
export type StoredEvent<E extends AnyEvent = AnyEvent> = EventEnvelope<E> & EventPosition;

/** What a command asks the log to record: the log stamps the rest. */
export type ProposedEvent<E extends AnyEvent = AnyEvent> = E;

export interface CommandMetadata {
  commandId: string;
  actor: string;
  /** The message that caused this command; the command itself when absent. */
  causationId?: string;
  /** The conversation this command belongs to; the command itself when absent. */
  correlationId?: string;
}

export const commandMetadataSchema = z.object({
  commandId: z.string().min(1).max(200).regex(/^[^\s]+$/, 'a command id has no whitespace'),
  actor: z.string().min(1),
  causationId: z.string().min(1).optional(),
  correlationId: z.string().min(1).optional(),
});

/** `path.to.field` from a zod issue, prefixed with where the value came from. */
export const fieldOf = (prefix: string, issue: z.ZodIssue | undefined): string =>
  [prefix, ...(issue?.path ?? [])].filter((part) => part !== '').join('.');
