import type { StoredMeshEvent } from './registry.js';

// A slice of the mesh's state: the events it folds, declared by type, and how it folds them. The
// composition (mesh/state.ts) hands each event only to the slices that declared its type, so a
// slice's fold is the whole of how its state changes, and a newcomer finds a rule's state in the
// folder the rule lives in.

export type MeshEventType = StoredMeshEvent['type'];

/** A stored event of one of the types `T`, its `data` typed as that type's schema says. */
export type StoredEventOf<T extends MeshEventType> = Extract<StoredMeshEvent, { type: T }>;

export interface Slice<State, Types extends MeshEventType = MeshEventType> {
  /** the types this slice folds; every other event leaves it as it is */
  readonly eventTypes: readonly Types[];
  empty(): State;
  /** Folds one event of a declared type, in place. Never throws: an event that does not apply changes nothing. */
  evolve(state: State, event: StoredEventOf<Types>): void;
}

export const defineSlice = <State, Types extends MeshEventType>(slice: Slice<State, Types>): Slice<State, Types> => slice;

/**
 * The slice's fold over any event: one of the types it declared is evolved, any other leaves its
 * state as it is. The composition hands it only those types anyway; the check is what lets an
 * event of the whole log reach a fold typed for a few.
 */
export const foldOf = <State, Types extends MeshEventType>(slice: Slice<State, Types>): ((state: State, event: StoredMeshEvent) => void) => {
  const declared = new Set<MeshEventType>(slice.eventTypes);
  const isDeclared = (event: StoredMeshEvent): event is StoredEventOf<Types> => declared.has(event.type);
  return (state, event) => {
    if (isDeclared(event)) slice.evolve(state, event);
  };
};
