import type { Decision } from '../decision.js';
import type { CommandMetadata } from '../events/envelope.js';
import { evolveMesh, type MeshState } from '../mesh/state.js';
import { allNodes } from '../nodes/state.js';
import type { Problem } from '../refusal.js';
import { meshEventRegistry, type StoredMeshEvent } from '../registry.js';
import { canonicalJson } from '../canonical.js';
import { composeDeclaration, type Composition } from './compose.js';
import type { DeclaredAssignment, Resource } from './declaration.js';

// What a command would do to the nodes, before it is carried out (`mesh … --plan`, as `nomad job
// plan` and `kubectl diff` answer): its decisions folded into a copy of the mesh, each node's
// declaration composed before and after, and the difference said per node, per module and per
// resource. Nothing here appends, and the state it is given is left as it was.

/** A node's declaration on one side of the plan. */
export type DeclarationSide =
  | { status: 'declared'; digest: string; assignments: DeclaredAssignment[] }
  | { status: 'uncomposable'; problems: Problem[] }
  /** not a node of the mesh (yet, or any more): it is sent an empty declaration */
  | { status: 'absent' };

export interface FieldChange {
  field: string;
  from: unknown;
  to: unknown;
}

export interface ResourceChange {
  key: string;
  kind: string;
  change: 'added' | 'removed' | 'changed';
  /** for a change: the fields that differ */
  fields: string[];
}

export interface ModuleChange {
  module: string;
  change: 'added' | 'removed' | 'changed';
  /** definition version, artifact, seats: what differs of the assignment itself */
  fields: FieldChange[];
  resources: ResourceChange[];
}

export interface NodePlan {
  node: string;
  before: DeclarationSide['status'];
  after: DeclarationSide['status'];
  modules: ModuleChange[];
  /** when the declaration after would not compose: why (the node would keep its previous one) */
  problems: Problem[];
}

const sideOf = (composition: Composition | undefined): DeclarationSide => {
  if (!composition) return { status: 'absent' };
  if (!composition.ok) return { status: 'uncomposable', problems: composition.problems };
  return { status: 'declared', digest: composition.declaration.digest, assignments: composition.declaration.assignments };
};

const same = (a: unknown, b: unknown): boolean => canonicalJson(a) === canonicalJson(b);

const resourceChanges = (before: readonly Resource[], after: readonly Resource[]): ResourceChange[] => {
  const was = new Map(before.map((r) => [r.key, r]));
  const now = new Map(after.map((r) => [r.key, r]));
  const changes: ResourceChange[] = [];
  for (const [key, resource] of was) if (!now.has(key)) changes.push({ key, kind: resource.kind, change: 'removed', fields: [] });
  for (const [key, resource] of now) {
    const old = was.get(key);
    if (!old) changes.push({ key, kind: resource.kind, change: 'added', fields: [] });
    else if (!same(old, resource)) {
      const fields = [...new Set([...Object.keys(old), ...Object.keys(resource)])].filter((f) => !same((old as Record<string, unknown>)[f], (resource as Record<string, unknown>)[f])).sort();
      changes.push({ key, kind: resource.kind, change: 'changed', fields });
    }
  }
  return changes.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
};

const ASSIGNMENT_FIELDS = ['definitionVersion', 'artifact', 'seats'] as const;

/** The difference between two declarations of one node, module by module; empty when nothing differs. */
export const diffAssignments = (before: readonly DeclaredAssignment[], after: readonly DeclaredAssignment[]): ModuleChange[] => {
  const was = new Map(before.map((a) => [a.module, a]));
  const now = new Map(after.map((a) => [a.module, a]));
  const modules = [...new Set([...was.keys(), ...now.keys()])].sort();
  return modules.flatMap((module): ModuleChange[] => {
    const old = was.get(module);
    const next = now.get(module);
    if (!old && next) return [{ module, change: 'added', fields: ASSIGNMENT_FIELDS.map((field) => ({ field, from: null, to: next[field] })), resources: resourceChanges([], next.resources) }];
    if (old && !next) return [{ module, change: 'removed', fields: [], resources: resourceChanges(old.resources, []) }];
    if (!old || !next) return [];
    const fields = ASSIGNMENT_FIELDS.filter((field) => !same(old[field], next[field])).map((field) => ({ field, from: old[field], to: next[field] }));
    const resources = resourceChanges(old.resources, next.resources);
    return fields.length > 0 || resources.length > 0 ? [{ module, change: 'changed', fields, resources }] : [];
  });
};

/** One node's plan from its two sides, or undefined when nothing it would be sent differs. */
export const diffDeclarations = (node: string, before: DeclarationSide, after: DeclarationSide): NodePlan | undefined => {
  const problems = after.status === 'uncomposable' ? after.problems : [];
  const assignmentsOf = (side: DeclarationSide): DeclaredAssignment[] => (side.status === 'declared' ? side.assignments : []);
  if (before.status === 'declared' && after.status === 'declared' && before.digest === after.digest) return undefined;
  if (before.status === after.status && before.status !== 'declared' && same(before, after)) return undefined;
  return { node, before: before.status, after: after.status, modules: after.status === 'uncomposable' ? [] : diffAssignments(assignmentsOf(before), assignmentsOf(after)), problems };
};

/** Every node's declaration in `state`, composed. */
const compositions = (state: MeshState): Map<string, Composition> => new Map([...allNodes(state.nodes)].map((node) => [node.name, composeDeclaration(state, node.name)]));

/**
 * The decisions' events as the log would hand them back, one commit each after `state.seq`: checked
 * by their types' schemas (defaults filled in, as an append does), stamped with `time` and the
 * command's metadata. Never appended.
 */
export const stampedAsLogged = (state: MeshState, decisions: readonly Decision[], metadata: CommandMetadata, time: string): StoredMeshEvent[][] => {
  const registry = meshEventRegistry();
  let seq = state.seq;
  const versions = new Map<string, number>();
  return decisions.map((decision) => {
    seq++;
    const first = (versions.get(decision.aggregate) ?? state.versions.get(decision.aggregate) ?? 0) + 1;
    versions.set(decision.aggregate, first + decision.events.length - 1);
    return decision.events.map((event, index) => ({
      id: `plan-${seq}-${index}`,
      schemaVersion: 1,
      aggregate: decision.aggregate,
      time,
      actor: metadata.actor,
      commandId: metadata.commandId,
      causationId: metadata.causationId ?? metadata.commandId,
      correlationId: metadata.correlationId ?? metadata.commandId,
      ...registry.validateNew(event.type, event.data, 'event'),
      seq,
      index,
      version: first + index,
    }));
  });
};

export interface MeshPlan {
  /** the log sequence the plan was decided at */
  seq: number;
  summaries: string[];
  /** what would be appended, commit by commit (type and aggregate of each event) */
  events: { aggregate: string; type: string }[];
  /** only the nodes whose declaration would differ */
  nodes: NodePlan[];
}

/**
 * Decides `steps` in turn, each against the mesh the ones before it would leave, on a copy of
 * `state`, and says what every node would be declared differently. A step's refusal is thrown, as
 * carrying it out would throw it. `state` is not changed.
 */
export const planMesh = (state: MeshState, steps: readonly ((state: MeshState) => Decision)[], metadata: CommandMetadata, time: string): MeshPlan => {
  const after = structuredClone(state);
  const summaries: string[] = [];
  const events: { aggregate: string; type: string }[] = [];
  for (const decide of steps) {
    const decision = decide(after);
    summaries.push(decision.summary);
    if (decision.events.length === 0) continue;
    for (const commit of stampedAsLogged(after, [decision], metadata, time)) {
      for (const event of commit) {
        evolveMesh(after, event);
        events.push({ aggregate: event.aggregate, type: event.type });
      }
    }
  }
  const was = compositions(state);
  const now = events.length === 0 ? was : compositions(after);
  const nodes = [...new Set([...was.keys(), ...now.keys()])].sort().flatMap((node) => diffDeclarations(node, sideOf(was.get(node)), sideOf(now.get(node))) ?? []);
  return { seq: state.seq, summaries, events, nodes };
};
