import type { StoredMeshEvent } from '../registry.js';
import { defineSlice } from '../slice.js';
import type { HeldResource, RunningVersion } from './events.js';

// What the control plane has stated about machines (fact.* events), so it states each change
// once (derive.ts). Kept by node and then by module: a fact touches one module of one node, and
// folding it costs the same however many refusals stand elsewhere in the mesh.

export interface StatedRefusal extends RunningVersion {
  reason: string;
}

/** A resource stated held, and where its hold was first stated (kept while it stays held, whatever its reason becomes). */
export interface StatedHold extends HeldResource {
  since: { seq: number; time: string };
}

/** A hold as the mesh reads it: which node, which module, which resource, why, since where. */
export interface NodeHold extends StatedHold {
  node: string;
  module: string;
}

/** One resource's standing fact. A module has few resources, so a list per module is kept rather
 * than a map per module: a map for every module with a refusal made the heap, and the collector's
 * work on it, grow with the refusals outstanding. */
export interface ResourceFact<V> {
  resource: string;
  fact: V;
}

interface NodeFacts {
  /** module → the version the last applied fact named */
  running: Map<string, RunningVersion>;
  /** module → the last refusal stated for each of its resources */
  refused: Map<string, ResourceFact<StatedRefusal>[]>;
  /** module → the version a crash loop was stated for, for each of its resources */
  crashLooping: Map<string, ResourceFact<RunningVersion>[]>;
  /** module → resource key → the hold last stated (fact.held); a module with nothing held has no entry */
  held: Map<string, Map<string, StatedHold>>;
  /** the kinds its agent last said it applies (fact.capabilities); null until it has said */
  capabilities: string[] | null;
}

export interface FactsState {
  byNode: Map<string, NodeFacts>;
}

export const emptyFactsState = (): FactsState => ({ byNode: new Map() });

const factsOf = (state: FactsState, node: string): NodeFacts => {
  let facts = state.byNode.get(node);
  if (!facts) {
    facts = { running: new Map(), refused: new Map(), crashLooping: new Map(), held: new Map(), capabilities: null };
    state.byNode.set(node, facts);
  }
  return facts;
};

const setIn = <V>(byModule: Map<string, ResourceFact<V>[]>, module: string, resource: string, fact: V): void => {
  const resources = byModule.get(module);
  if (!resources) {
    byModule.set(module, [{ resource, fact }]);
    return;
  }
  const standing = resources.find((entry) => entry.resource === resource);
  if (standing) standing.fact = fact;
  else resources.push({ resource, fact });
};

const factOf = <V>(byModule: Map<string, ResourceFact<V>[]> | undefined, module: string, resource: string): V | undefined =>
  byModule?.get(module)?.find((entry) => entry.resource === resource)?.fact;

/** Folds one fact into the state, in place; any other event changes nothing. */
export const evolveFacts = (state: FactsState, event: StoredMeshEvent): void => {
  switch (event.type) {
    case 'fact.applied': {
      const data = event.data;
      const facts = factsOf(state, data.node);
      facts.running.set(data.module, data.version);
      // Running the version now: what was refused or crash-looping of this module is over.
      facts.refused.delete(data.module);
      facts.crashLooping.delete(data.module);
      break;
    }
    case 'fact.refused': {
      const data = event.data;
      setIn(factsOf(state, data.node).refused, data.module, data.resource, { reason: data.reason, ...data.version });
      break;
    }
    case 'fact.crash-looping': {
      const data = event.data;
      setIn(factsOf(state, data.node).crashLooping, data.module, data.resource, data.version);
      break;
    }
    case 'fact.held': {
      // The module's whole hold, replaced: a resource still held keeps the place it was first stated.
      const data = event.data;
      const facts = factsOf(state, data.node);
      const before = facts.held.get(data.module);
      const now = new Map<string, StatedHold>();
      for (const held of data.resources) now.set(held.resource, { ...held, since: before?.get(held.resource)?.since ?? { seq: event.seq, time: event.time } });
      if (now.size > 0) facts.held.set(data.module, now);
      else facts.held.delete(data.module);
      break;
    }
    case 'fact.capabilities': {
      const data = event.data;
      factsOf(state, data.node).capabilities = [...data.capabilities].sort();
      break;
    }
    case 'fact.stopped': {
      const data = event.data;
      state.byNode.get(data.node)?.running.delete(data.module);
      break;
    }
    default:
      break;
  }
};

/** The refusal last stated for a resource of a module on a node, while it stands. */
export const statedRefusal = (state: FactsState, node: string, module: string, resource: string): StatedRefusal | undefined =>
  factOf(state.byNode.get(node)?.refused, module, resource);

/** The version a crash loop was last stated for, while it stands. */
export const statedCrashLoop = (state: FactsState, node: string, module: string, resource: string): RunningVersion | undefined =>
  factOf(state.byNode.get(node)?.crashLooping, module, resource);

/** The version a node was last stated to run of a module. */
export const statedRunning = (state: FactsState, node: string, module: string): RunningVersion | undefined => state.byNode.get(node)?.running.get(module);

/** Every module a node was last stated to run, with its version. */
export const runningOn = (state: FactsState, node: string): ReadonlyMap<string, RunningVersion> => state.byNode.get(node)?.running ?? new Map();

/** What was last stated held of a module on a node (empty when nothing is). */
export const statedHolds = (state: FactsState, node: string, module: string): ReadonlyMap<string, StatedHold> => state.byNode.get(node)?.held.get(module) ?? new Map();

/** The kinds a node's agent last said it applies beyond every agent's; empty until it has said. */
export const statedCapabilities = (state: FactsState, node: string): readonly string[] => state.byNode.get(node)?.capabilities ?? [];

/** Every module of a node with something stated held. */
export const heldModulesOn = (state: FactsState, node: string): ReadonlyMap<string, ReadonlyMap<string, StatedHold>> => state.byNode.get(node)?.held ?? new Map();

/** Every hold stated and not ended, across the mesh: what the overview names. */
export const allStatedHolds = function* (state: FactsState): Iterable<NodeHold> {
  for (const [node, facts] of state.byNode) for (const [module, resources] of facts.held) for (const hold of resources.values()) yield { node, module, ...hold };
};

export const factsSlice = defineSlice({
  eventTypes: ['fact.applied', 'fact.refused', 'fact.crash-looping', 'fact.stopped', 'fact.held', 'fact.capabilities'] as const,
  empty: emptyFactsState,
  evolve: evolveFacts,
});
