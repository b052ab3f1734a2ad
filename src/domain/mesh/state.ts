import type { StoredMeshEvent } from '../registry.js';
import { emptyCommandIndex, recordCommand, type CommandIndex } from './command-index.js';
import { foldOf, type MeshEventType, type Slice } from '../slice.js';
import { assignmentsSlice } from '../assignments/state.js';
import { buildsSlice } from '../builds/state.js';
import { catalogueSlice } from '../catalogue/state.js';
import { declarationsSlice } from '../declarations/state.js';
import { factsSlice } from '../facts/state.js';
import { nodesSlice } from '../nodes/state.js';
import { operatorsSlice } from '../operators/state.js';
import { seatsSlice } from '../seats/state.js';
import { secretsSlice } from '../secrets/state.js';
import { routesSlice } from '../routes/state.js';
import { trustSlice } from '../trust/state.js';
import { answersSlice } from '../answers/state.js';

// The mesh as the log says it is: a composition of slices, each folding the events it declared
// (src/domain/<slice>/state.ts). The composition itself keeps only what belongs to the log: the
// last sequence folded (the point a decision is made at), each aggregate's version (the append's
// expectation) and the commands carried out (so a retried command is answered, not repeated).

const slices = {
  catalogue: catalogueSlice,
  seats: seatsSlice,
  nodes: nodesSlice,
  assignments: assignmentsSlice,
  operators: operatorsSlice,
  builds: buildsSlice,
  facts: factsSlice,
  declarations: declarationsSlice,
  secrets: secretsSlice,
  routes: routesSlice,
  trust: trustSlice,
  answers: answersSlice,
};

type SliceName = keyof typeof slices;
type SliceStates = { [Name in SliceName]: ReturnType<(typeof slices)[Name]['empty']> };

export interface MeshState extends SliceStates {
  seq: number;
  /** the commands the log holds, so a retried command is answered, not repeated (command-index.ts) */
  commands: CommandIndex;
  /** each aggregate's version (its event count), for the append's expectation */
  versions: Map<string, number>;
}

export const emptyMeshState = (): MeshState => ({
  seq: 0,
  commands: emptyCommandIndex(),
  versions: new Map(),
  catalogue: slices.catalogue.empty(),
  seats: slices.seats.empty(),
  nodes: slices.nodes.empty(),
  assignments: slices.assignments.empty(),
  operators: slices.operators.empty(),
  builds: slices.builds.empty(),
  facts: slices.facts.empty(),
  declarations: slices.declarations.empty(),
  secrets: slices.secrets.empty(),
  routes: slices.routes.empty(),
  trust: slices.trust.empty(),
  answers: slices.answers.empty(),
});

type Fold = (state: MeshState, event: StoredMeshEvent) => void;

/** A slice's fold over the composition: its own part of the state, and the types it declared. */
const partOf = <State, Types extends MeshEventType>(slice: Slice<State, Types>, part: (state: MeshState) => State): { types: readonly Types[]; fold: Fold } => {
  const fold = foldOf(slice);
  return { types: slice.eventTypes, fold: (state, event) => fold(part(state), event) };
};

/** event type → the folds of the slices that declared it, in the order the slices are listed */
const foldsByType: ReadonlyMap<MeshEventType, readonly Fold[]> = (() => {
  const table = new Map<MeshEventType, Fold[]>();
  for (const { types, fold } of [
    partOf(slices.catalogue, (state) => state.catalogue),
    partOf(slices.seats, (state) => state.seats),
    partOf(slices.nodes, (state) => state.nodes),
    partOf(slices.assignments, (state) => state.assignments),
    partOf(slices.operators, (state) => state.operators),
    partOf(slices.builds, (state) => state.builds),
    partOf(slices.facts, (state) => state.facts),
    partOf(slices.declarations, (state) => state.declarations),
    partOf(slices.secrets, (state) => state.secrets),
    partOf(slices.routes, (state) => state.routes),
    partOf(slices.trust, (state) => state.trust),
    partOf(slices.answers, (state) => state.answers),
  ]) {
    for (const type of types) table.set(type, [...(table.get(type) ?? []), fold]);
  }
  return table;
})();

/** The event types some slice folds: any other type moves only the log's position. */
export const foldedEventTypes = (): MeshEventType[] => [...foldsByType.keys()];

/**
 * Folds one event into the state, in place: the fold owns its state. Never throws; an event that
 * does not apply (a release of a seat no longer held) changes nothing.
 */
export const evolveMesh = (state: MeshState, event: StoredMeshEvent): MeshState => {
  state.seq = Math.max(state.seq, event.seq);
  recordCommand(state.commands, event.commandId, { seq: event.seq, aggregate: event.aggregate });
  state.versions.set(event.aggregate, event.version);
  for (const fold of foldsByType.get(event.type) ?? []) fold(state, event);
  return state;
};
