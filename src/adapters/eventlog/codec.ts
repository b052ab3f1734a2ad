import { commitSchema, fieldOf, type AnyEvent, type Commit, type EventPosition, type StoredEvent } from '../../domain/events/envelope.js';
import type { EventRegistry } from '../../domain/events/registry.js';
import { CorruptEventError } from '../../errors.js';
import { isValidCommit } from './envelope-check.js';

// A commit on the wire is UTF-8 JSON. Reading it back validates the envelope, checks that it sits
// on its own aggregate's subject, upcasts each event to its current schema version and validates
// the result: a reader either gets events it can trust or an error naming the sequence and field.
// The envelope is checked by hand first (envelope-check.ts); zod parses only what that turns down.

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

export const encodeCommit = (commit: Commit): Uint8Array => encoder.encode(JSON.stringify(commit));

export const decodeCommit = <E extends AnyEvent>(registry: EventRegistry<E>, seq: number, aggregate: string, payload: Uint8Array): StoredEvent<E>[] => {
  let raw: unknown;
  try {
    raw = JSON.parse(decoder.decode(payload));
  } catch (cause) {
    throw new CorruptEventError(`log message at seq ${seq} is not UTF-8 JSON`, { seq, field: 'payload' }, { cause });
  }
  const commit = isValidCommit(raw) ? raw : parseCommit(seq, aggregate, raw);
  return commit.events.map((envelope, index) => {
    if (envelope.aggregate !== aggregate) {
      throw new CorruptEventError(
        `log message at seq ${seq}: events.${index}.aggregate is ${envelope.aggregate} but the message is on ${aggregate}'s subject`,
        { seq, field: `events.${index}.aggregate` },
      );
    }
    const event = registry.decode(envelope.type, envelope.schemaVersion, envelope.data, { seq, field: `events.${index}` });
    // The envelope is this call's own (parsed just now): it becomes the stored event in place.
    const position: EventPosition = { seq, index, version: commit.firstVersion + index };
    if (commit.command) position.signed = commit.command;
    return Object.assign(envelope, event, position);
  });
};

/** The slow path: zod decides, and names the field when the commit is not valid. */
const parseCommit = (seq: number, aggregate: string, raw: unknown): Commit => {
  const parsed = commitSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = fieldOf('', issue);
    throw new CorruptEventError(`log message at seq ${seq} (${aggregate}): ${field || 'commit'}: ${issue?.message ?? 'invalid'}`, {
      seq,
      field,
    });
  }
  return parsed.data;
};
