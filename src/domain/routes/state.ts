import { assignmentKey } from '../assignments/state.js';
import { defineSlice } from '../slice.js';
import type { AssignmentRef } from '../seats/events.js';

// The public names the mesh has handed back, by name (one holder each, mesh-wide) and by
// assignment (what `${route:NAME}` and the routes file read). A name goes with its assignment.

export interface Grant {
  node: string;
  module: string;
  route: string;
  name: string;
  publicName: string;
  proxy: AssignmentRef;
}

export interface RoutesState {
  byPublicName: Map<string, Grant>;
  /** `<node>/<module>` → name asked for → its grant */
  byAssignment: Map<string, Map<string, Grant>>;
}

export const routesSlice = defineSlice({
  eventTypes: ['route.public-name-granted', 'assignment.removed'] as const,
  empty: (): RoutesState => ({ byPublicName: new Map(), byAssignment: new Map() }),
  evolve(state, event) {
    const key = assignmentKey(event.data);
    if (event.type === 'assignment.removed') {
      for (const grant of state.byAssignment.get(key)?.values() ?? []) state.byPublicName.delete(grant.publicName);
      state.byAssignment.delete(key);
      return;
    }
    const grant: Grant = { ...event.data };
    let names = state.byAssignment.get(key);
    if (!names) state.byAssignment.set(key, (names = new Map()));
    const previous = names.get(grant.name);
    if (previous && state.byPublicName.get(previous.publicName) === previous) state.byPublicName.delete(previous.publicName);
    names.set(grant.name, grant);
    state.byPublicName.set(grant.publicName, grant);
  },
});

/** Who holds a public name, if anyone. */
export const holderOfPublicName = (state: RoutesState, publicName: string): Grant | undefined => state.byPublicName.get(publicName);

/** The names granted to one assignment, by the name asked for. */
export const grantsOf = (state: RoutesState, ref: AssignmentRef): ReadonlyMap<string, Grant> => state.byAssignment.get(assignmentKey(ref)) ?? new Map();

/** Whether any assignment of `module` holds a public name. */
export const hasGrants = (state: RoutesState, module: string): boolean => {
  for (const key of state.byAssignment.keys()) if (key.endsWith(`/${module}`)) return true;
  return false;
};

/** Every grant, in the order the assignments were first granted. */
export const allGrants = (state: RoutesState): Grant[] => [...state.byAssignment.values()].flatMap((names) => [...names.values()]);
