import { defineSlice } from '../slice.js';
import type { AssignmentRef } from '../seats/events.js';
import type { Resolution } from './events.js';

// Assignments: which module runs on which node, at which definition, and how each of its
// requirements was answered. Indexed by node and by module so "what runs on alpha" and "where
// does gitea run" cost what they find, and by provider so "what would lose its answer if this
// went" does too.

export interface AssignmentState {
  module: string;
  node: string;
  definitionVersion: number;
  resolutions: Resolution[];
  pins: Record<string, AssignmentRef>;
  values: Record<string, string | number | boolean>;
  placements: Record<string, string>;
}

export interface AssignmentsState {
  /** keyed `<node>/<module>` */
  byKey: Map<string, AssignmentState>;
  /** node → its assignments' keys */
  byNode: Map<string, Set<string>>;
  /** module → its assignments' keys */
  byModule: Map<string, Set<string>>;
  /** an assignment's key → the keys of the assignments a requirement of which it answers */
  answering: Map<string, Set<string>>;
}

export const assignmentKey = (ref: AssignmentRef): string => `${ref.node}/${ref.module}`;

const index = (by: Map<string, Set<string>>, at: string, key: string): void => {
  let keys = by.get(at);
  if (!keys) by.set(at, (keys = new Set()));
  keys.add(key);
};

const unindex = (by: Map<string, Set<string>>, at: string, key: string): void => {
  const keys = by.get(at);
  keys?.delete(key);
  if (keys?.size === 0) by.delete(at);
};

const collect = (state: AssignmentsState, keys: Set<string> | undefined): AssignmentState[] =>
  [...(keys ?? [])].flatMap((key) => {
    const assignment = state.byKey.get(key);
    return assignment ? [assignment] : [];
  });

export const assignmentsSlice = defineSlice({
  eventTypes: ['assignment.created', 'assignment.removed'] as const,
  empty: (): AssignmentsState => ({ byKey: new Map(), byNode: new Map(), byModule: new Map(), answering: new Map() }),
  evolve(state, event) {
    const data = event.data;
    const key = assignmentKey(data);
    if (event.type === 'assignment.created') {
      state.byKey.set(key, {
        module: event.data.module,
        node: event.data.node,
        definitionVersion: event.data.definitionVersion,
        resolutions: event.data.resolutions,
        pins: event.data.pins,
        values: event.data.values,
        placements: event.data.placements,
      });
      index(state.byNode, data.node, key);
      index(state.byModule, data.module, key);
      for (const provider of providersOf(event.data.resolutions)) index(state.answering, provider, key);
    } else {
      const removed = state.byKey.get(key);
      for (const provider of providersOf(removed?.resolutions ?? [])) unindex(state.answering, provider, key);
      state.byKey.delete(key);
      unindex(state.byNode, data.node, key);
      unindex(state.byModule, data.module, key);
    }
  },
});

/** The assignments whose requirements an assignment answers directly (not through a seat). */
const providersOf = (resolutions: Resolution[]): string[] =>
  resolutions.flatMap((r) => (r.answer.kind === 'assignment' && r.answer.via !== 'seat' ? [assignmentKey(r.answer)] : []));

/** What relies on an assignment directly: each assignment a requirement of which it answers, in the order they were made. */
export const answeredBy = (state: AssignmentsState, provider: AssignmentRef): AssignmentState[] => collect(state, state.answering.get(assignmentKey(provider)));

export const assignmentOf = (state: AssignmentsState, ref: AssignmentRef): AssignmentState | undefined => state.byKey.get(assignmentKey(ref));

export const isAssigned = (state: AssignmentsState, ref: AssignmentRef): boolean => state.byKey.has(assignmentKey(ref));

/** Every assignment, in the order they were made. */
export const allAssignments = (state: AssignmentsState): IterableIterator<AssignmentState> => state.byKey.values();

/** What runs on a node, in the order it was assigned. */
export const assignmentsOn = (state: AssignmentsState, node: string): AssignmentState[] => collect(state, state.byNode.get(node));

/** Where a module runs, in the order it was assigned. */
export const assignmentsOf = (state: AssignmentsState, module: string): AssignmentState[] => collect(state, state.byModule.get(module));
