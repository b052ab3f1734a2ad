import type { z } from 'zod';
import { CorruptEventError, MeshError, UnknownEventError, ValidationError } from '../../errors.js';
import { fieldOf, type AnyEvent } from './envelope.js';

// Every event type the mesh knows, at its current schema version, with the pure upcasters that
// carry data stored at any older version up to the current one. Unknown types and versions are
// loud errors: an event is never silently dropped or misread.

export type Upcaster = (data: unknown) => unknown;

/** An upcaster reads data as it was stored, before any schema: whether it is an object to add to or reshape. */
export const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

export interface EventDefinition<Type extends string = string, Data = unknown> {
  type: Type;
  version: number;
  schema: z.ZodType<Data>;
  /** `upcasters[n]` turns data stored at version n into version n + 1. */
  upcasters?: Readonly<Record<number, Upcaster>>;
}

export const defineEvent = <const Type extends string, Data>(definition: EventDefinition<Type, Data>): EventDefinition<Type, Data> => {
  for (let from = 1; from < definition.version; from++) {
    if (!definition.upcasters?.[from]) {
      throw new Error(`event ${definition.type} is at version ${definition.version} but has no upcaster from version ${from}`);
    }
  }
  return definition;
};

/** The event a definition describes, at its current version: `{ type, data }`, `data` as its schema parses it. */
export type EventOf<D extends EventDefinition> = D extends EventDefinition ? { type: D['type']; data: z.output<D['schema']> } : never;

/** An event read back: the event and the schema version it now stands at (the current one). */
export type DecodedEvent<E extends AnyEvent> = E & { schemaVersion: number };

/**
 * The registry of `definitions`, typed: what it decodes is the union of their events, so code that
 * switches on an event's `type` reads its `data` as that type's schema says.
 */
export const registryOf = <D extends EventDefinition>(definitions: readonly D[]): EventRegistry<EventOf<D>> => new EventRegistry<EventOf<D>>(definitions);

/**
 * `E`: the union of the events it knows, when built by `registryOf`; a registry built by its
 * constructor decodes to `AnyEvent` (data unknown).
 */
export class EventRegistry<E extends AnyEvent = AnyEvent> {
  private readonly definitions = new Map<string, EventDefinition>();

  constructor(definitions: readonly EventDefinition[] = []) {
    for (const definition of definitions) this.register(definition);
  }

  register(definition: EventDefinition): this {
    if (this.definitions.has(definition.type)) throw new Error(`event type ${definition.type} is defined twice`);
    this.definitions.set(definition.type, definition);
    return this;
  }

  types(): string[] {
    return [...this.definitions.keys()].sort();
  }

  currentVersion(type: string): number {
    return this.definition(type, 0).version;
  }

  /** Validates an event about to be appended at the current version, and returns it as parsed; the error names the field. */
  validateNew(type: string, data: unknown, where: string): E {
    const definition = this.definitions.get(type);
    if (!definition) {
      throw new ValidationError(`unknown event type ${type} at ${where}; known types: ${this.types().join(', ') || 'none'}`, {
        field: `${where}.type`,
        type,
      });
    }
    const parsed = definition.schema.safeParse(data);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const field = fieldOf(`${where}.data`, issue);
      throw new ValidationError(`event ${type}: ${field}: ${issue?.message ?? 'invalid'}`, { field, type });
    }
    return this.typed({ type, data: parsed.data });
  }

  /** Reads data stored at `schemaVersion` as the current version. */
  upcast(type: string, schemaVersion: number, data: unknown, where: { seq: number }): { version: number; data: unknown } {
    const definition = this.definition(type, schemaVersion, where);
    if (schemaVersion > definition.version) {
      throw new UnknownEventError(
        `event ${type} at seq ${where.seq} is schema version ${schemaVersion}, newer than this code knows (version ${definition.version}); upgrade the mesh before reading this log`,
        { type, schemaVersion, seq: where.seq },
      );
    }
    let current = data;
    for (let from = schemaVersion; from < definition.version; from++) {
      const upcaster = definition.upcasters?.[from];
      if (!upcaster) {
        throw new UnknownEventError(`event ${type} at seq ${where.seq}: no upcaster from schema version ${from}`, {
          type,
          schemaVersion,
          seq: where.seq,
        });
      }
      current = upcaster(current);
    }
    return { version: definition.version, data: current };
  }

  /**
   * Reads one stored event as the current version of its type: upcast, then parsed by its type's
   * schema, so its `data` is what its `type` says. A failure is corrupt data at `where.seq`, naming
   * the field under `where.field` (the event's place in its commit, e.g. `events.0`).
   */
  decode(type: string, schemaVersion: number, data: unknown, where: { seq: number; field: string }): DecodedEvent<E> {
    let upcast: { version: number; data: unknown };
    try {
      upcast = this.upcast(type, schemaVersion, data, where);
    } catch (error) {
      if (error instanceof MeshError) throw error;
      throw new CorruptEventError(`log message at seq ${where.seq}: upcasting ${type} from version ${schemaVersion} failed`, {
        seq: where.seq,
        field: `${where.field}.data`,
      }, { cause: error });
    }
    const parsed = this.definition(type, schemaVersion, where).schema.safeParse(upcast.data);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const field = fieldOf(`${where.field}.data`, issue);
      throw new CorruptEventError(`log message at seq ${where.seq} (${type} v${schemaVersion}): ${field}: ${issue?.message ?? 'invalid'}`, {
        seq: where.seq,
        field,
        type,
      });
    }
    return { ...this.typed({ type, data: parsed.data }), schemaVersion: upcast.version };
  }

  /**
   * The one place an event becomes typed: `type`'s own schema has just parsed `data`, so the pair
   * is the member of E that `type` names (E is made from these same definitions, by registryOf).
   */
  private typed(event: AnyEvent): E {
    return event as E;
  }

  private definition(type: string, schemaVersion: number, where?: { seq: number }): EventDefinition {
    const definition = this.definitions.get(type);
    if (!definition) {
      const at = where ? ` at seq ${where.seq}` : '';
      throw new UnknownEventError(`unknown event type ${type}${at} (schema version ${schemaVersion}); this code knows: ${this.types().join(', ')}`, {
        type,
        schemaVersion,
        ...(where ? { seq: where.seq } : {}),
      });
    }
    return definition;
  }
}
