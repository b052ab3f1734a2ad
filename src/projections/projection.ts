import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ClientBase } from 'pg';
import { projectRoot } from '../config.js';
import type { AnyEvent, StoredEvent } from '../domain/events/envelope.js';

// A projection is a small declarative definition: its name, a version, the SQL that creates its
// tables at that version, and what each event type it handles writes. The engine owns everything
// else — where its tables live, transactions, checkpoints, rebuilds — so the same definition
// builds into a serving schema or a shadow one without knowing which.

/** What a handler writes through: the open transaction and the schema this build lives in. */
export interface ProjectionTx {
  readonly client: ClientBase;
  /** The build's schema, quoted, e.g. `"projector_audit_v2_3"`. */
  readonly schema: string;
  /** A table of this build, schema-qualified and quoted: use it in every statement. */
  table(name: string): string;
}

export type EventHandler<E extends AnyEvent = AnyEvent> = (event: StoredEvent<E>, tx: ProjectionTx) => Promise<void>;

/** Every event type: for projections that index the whole log. */
export const EVERY_EVENT = '*';

/** `E`: the events of the log it projects (the mesh's: MeshEvent), as its handlers read them. */
export interface ProjectionDefinition<E extends AnyEvent = AnyEvent> {
  /** Lower-case letters, digits and `_`; names the read views' owner and the build schemas. */
  readonly name: string;
  /** Bump it whenever the schema or what a handler writes changes: a new version is rebuilt from the log. */
  readonly version: number;
  /** SQL creating the tables of this version, run with `search_path` set to the build's schema (no schema names in it). */
  readonly schemaSql: string;
  /** What each handled event type writes; `EVERY_EVENT` for all. Events of other types only move the checkpoint. */
  readonly handlers: Readonly<Record<string, EventHandler<E>>>;
  /**
   * Optional fast path while catching up: write many handled events at once (say, one multi-row
   * insert). It must write exactly what the handlers would, one event after another.
   */
  readonly applyMany?: (events: readonly StoredEvent<E>[], tx: ProjectionTx) => Promise<void>;
}

/** What planning and creating a projection's builds need of it: not its handlers, so any projection's will do. */
export type ProjectionSchema = Pick<ProjectionDefinition, 'name' | 'version' | 'schemaSql'>;

const NAME = /^[a-z][a-z0-9_]{0,23}$/;

export const defineProjection = <E extends AnyEvent>(definition: ProjectionDefinition<E>): ProjectionDefinition<E> => {
  if (!NAME.test(definition.name)) {
    throw new Error(`projection name "${definition.name}" must be 1–24 lower-case letters, digits or _, starting with a letter`);
  }
  if (!Number.isInteger(definition.version) || definition.version < 1) {
    throw new Error(`projection ${definition.name}: version must be a whole number ≥ 1, not ${definition.version}`);
  }
  if (Object.keys(definition.handlers).length === 0) throw new Error(`projection ${definition.name} handles no event type`);
  return definition;
};

/** The handler for an event type, if the projection handles it. */
export const handlerOf = <E extends AnyEvent>(projection: ProjectionDefinition<E>, type: string): EventHandler<E> | undefined =>
  projection.handlers[type] ?? projection.handlers[EVERY_EVENT];

/** `migrations/<projection>/v<version>.sql`: the whole schema of one version (a new version is a rebuild, never an ALTER). */
export const migrationSql = (projection: string, version: number, root = join(projectRoot, 'migrations')): string =>
  readFileSync(join(root, projection, `v${version}.sql`), 'utf8');
