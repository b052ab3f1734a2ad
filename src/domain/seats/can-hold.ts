import { manifestOf, registeredModuleNames } from '../catalogue/state.js';
import type { MeshState } from '../mesh/state.js';
import { seatNamed, type SeatState } from './state.js';
import type { Problem } from '../refusal.js';

// CanHold: the one judgement shared by assignment and handover (design 26). A module may hold a
// seat when its definition claims (or declares) it, it provides what the seat delivers, and it
// serves every verb the seat's protocol declares (ADR 0132).

export const canHoldProblems = (state: MeshState, module: string, seat: SeatState, what: string): Problem[] => {
  const definition = manifestOf(state.catalogue, module);
  if (!definition) return [{ what, why: `module ${module} is not registered`, remedy: `register it first: mesh module register <manifest.json>`, missing: 'module' }];
  const problems: Problem[] = [];
  const names = new Set([seat.name, ...seat.aliases]);
  const claims = definition.canHold.some((claim) => names.has(typeof claim === 'string' ? claim : claim.seat));
  const declares = definition.seats.some((declared) => seatNamed(state.seats, declared.name)?.id === seat.id);
  if (!claims && !declares) {
    problems.push({ what, why: `module ${module} cannot hold ${seat.name}: its definition does not claim it`, remedy: `add "${seat.name}" to canHold in ${module}'s manifest and register it again` });
  }
  if (seat.delivers && !definition.provides.some((p) => p.provision === seat.delivers)) {
    problems.push({ what, why: `${seat.name} delivers ${seat.delivers}, which module ${module} does not provide`, remedy: `hand the seat to a module that provides ${seat.delivers}` });
  }
  const missing = seat.protocol.serves.filter((verb) => !definition.tools.includes(verb));
  if (missing.length > 0) {
    problems.push({
      what,
      why: `module ${module} does not serve ${missing.join(', ')}, which ${seat.name}'s protocol declares (ADR 0132)`,
      remedy: `serve ${missing.join(', ')} (list them in tools) or choose a module that does`,
    });
  }
  return problems;
};

/** Modules whose newest definition could hold the seat: named when a seat is unheld. */
export const couldHold = (state: MeshState, seat: SeatState): string[] =>
  [...registeredModuleNames(state.catalogue)].filter((module) => canHoldProblems(state, module, seat, seat.name).length === 0).sort();
