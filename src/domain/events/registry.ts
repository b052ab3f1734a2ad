import type { z } from 'zod';
import { UnknownEventError, ValidationError } from '../../errors.js';
import { fieldOf } from './envelope.js';

// Every event type the mesh knows, at its current schema version, with the pure upcasters that
// carry data stored at any older version up to the current one. Unknown types and versions are
// loud errors: an event is never silently dropped or misread.

export type Upcaster = (data: unknown) => unknown;

export interface EventDefinition<Data = unknown> {
  type: string;
  version: number;
  schema: z.ZodType<Data>;
  /** `upcasters[n]` turns data stored at version n into version n + 1. */
  upcasters?: Readonly<Record<number, Upcaster>>;
}

export const defineEvent = <Data>(definition: EventDefinition<Data>): EventDefinition<Data> => {
  for (let from = 1; from < definition.version; from++) {
    if (!definition.upcasters?.[from]) {
      throw new Error(`event ${definition.type} is at version ${definition.version} but has no upcaster from version ${from}`);
    }
  }
  return definition;
};

export class EventRegistry {
  private readonly definitions = new Map<string, EventDefinition>();

  constructor(definitions: readonly EventDefinition<unknown>[] = []) {
    for (const definition of definitions) this.register(definition);
  }

  register(definition: EventDefinition<unknown>): this {
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

  /** Validates data about to be appended at the current version; the error names the field. */
  validateNew(type: string, data: unknown, where: string): unknown {
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
    return parsed.data;
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

  schemaOf(type: string): z.ZodType<unknown> {
    return this.definition(type, 0).schema;
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
