import type { SeatDeclaration } from '../catalogue/manifest.js';
import { defineSlice } from '../slice.js';
import type { AssignmentRef } from './events.js';

// Seats: their names (and the former names that still resolve), who holds each in each scope, and
// the seats modules declare. Every rule about who may hold what reads this slice.

export interface SeatState {
  id: string;
  name: string;
  /** former names, still resolving (ADR 0122: a rename freezes nothing) */
  aliases: string[];
  scope: 'mesh' | 'node';
  delivers: string | null;
  reserved: boolean;
  decided: string;
  protocol: { accepts: { verb: string; retain: string }[]; emits: string[]; serves: string[] };
  definer: { kind: 'system' } | { kind: 'module'; module: string };
}

export interface SeatsState {
  byId: Map<string, SeatState>;
  /** every name and former name → the seat's id */
  names: Map<string, string>;
  /** keyed `<seatId>@<scopeKey>`; scopeKey is `mesh` or the node's name */
  holdings: Map<string, AssignmentRef>;
  /** `<node>/<module>` → the holding keys it holds, so what one assignment holds costs its holdings */
  byHolder: Map<string, Set<string>>;
  /** module → the seats its newest definition declares */
  declaredBy: Map<string, Set<string>>;
}

export interface Holding {
  seat: string;
  scopeKey: string;
  holder: AssignmentRef;
}

export const holdingKey = (seatId: string, scopeKey: string): string => `${seatId}@${scopeKey}`;

const declaredSeat = (module: string, declaration: SeatDeclaration, existing: SeatState | undefined): SeatState => ({
  id: existing?.id ?? declaration.name,
  name: existing?.name ?? declaration.name,
  aliases: existing?.aliases ?? [],
  scope: declaration.scope,
  delivers: null,
  reserved: false,
  decided: `declared by module ${module}`,
  protocol: { accepts: declaration.accepts, emits: declaration.emits, serves: declaration.serves },
  definer: { kind: 'module', module },
});

const holderKey = (ref: AssignmentRef): string => `${ref.node}/${ref.module}`;

const hold = (state: SeatsState, seat: string, scopeKey: string, holder: AssignmentRef): void => {
  const key = holdingKey(seat, scopeKey);
  const previous = state.holdings.get(key);
  if (previous) unindex(state, key, previous);
  // Set in place: a holding keeps its place in the order holdings are listed in.
  state.holdings.set(key, holder);
  let held = state.byHolder.get(holderKey(holder));
  if (!held) state.byHolder.set(holderKey(holder), (held = new Set()));
  held.add(key);
};

const release = (state: SeatsState, key: string): void => {
  const holder = state.holdings.get(key);
  if (!holder) return;
  state.holdings.delete(key);
  unindex(state, key, holder);
};

const unindex = (state: SeatsState, key: string, holder: AssignmentRef): void => {
  const held = state.byHolder.get(holderKey(holder));
  held?.delete(key);
  if (held?.size === 0) state.byHolder.delete(holderKey(holder));
};

const holdingAt = (key: string, holder: AssignmentRef): Holding => {
  const at = key.lastIndexOf('@');
  return { seat: key.slice(0, at), scopeKey: key.slice(at + 1), holder };
};

const forgetSeat = (state: SeatsState, seat: SeatState): void => {
  state.byId.delete(seat.id);
  for (const name of [seat.name, ...seat.aliases]) if (state.names.get(name) === seat.id) state.names.delete(name);
};

export const seatsSlice = defineSlice({
  eventTypes: ['seat.defined', 'seat.renamed', 'seat.held', 'seat.handed-over', 'seat.released', 'module.registered'] as const,
  empty: (): SeatsState => ({ byId: new Map(), names: new Map(), holdings: new Map(), byHolder: new Map(), declaredBy: new Map() }),
  evolve(state, event) {
    switch (event.type) {
      case 'seat.defined': {
        const data = event.data;
        state.byId.set(data.seat, {
          id: data.seat,
          name: data.name,
          aliases: [],
          scope: data.scope,
          delivers: data.delivers,
          reserved: data.reserved,
          decided: data.decided,
          protocol: data.protocol,
          definer: { kind: 'system' },
        });
        state.names.set(data.name, data.seat);
        break;
      }
      case 'seat.renamed': {
        const data = event.data;
        const seat = state.byId.get(data.seat);
        if (seat) {
          seat.aliases = [...seat.aliases.filter((a) => a !== data.to), data.from];
          seat.name = data.to;
          state.names.set(data.to, seat.id);
          state.names.set(data.from, seat.id);
        }
        break;
      }
      case 'seat.handed-over': {
        const data = event.data;
        hold(state, data.seat, data.scopeKey, { node: data.to.node, module: data.to.module });
        break;
      }
      case 'seat.held': {
        const data = event.data;
        hold(state, data.seat, data.scopeKey, { node: data.node, module: data.module });
        break;
      }
      case 'seat.released': {
        const data = event.data;
        const key = holdingKey(data.seat, data.scopeKey);
        const holder = state.holdings.get(key);
        if (holder && holder.node === data.node && holder.module === data.module) release(state, key);
        break;
      }
      case 'module.registered': {
        const data = event.data;
        const declared = new Set<string>();
        for (const declaration of data.manifest.seats) {
          const seat = declaredSeat(data.module, declaration, seatNamed(state, declaration.name));
          state.byId.set(seat.id, seat);
          state.names.set(seat.name, seat.id);
          declared.add(seat.id);
        }
        // A seat the module no longer declares leaves the set with it.
        for (const id of state.declaredBy.get(data.module) ?? []) {
          const seat = state.byId.get(id);
          if (seat && seat.definer.kind === 'module' && seat.definer.module === data.module && !declared.has(id)) forgetSeat(state, seat);
        }
        state.declaredBy.set(data.module, declared);
        break;
      }
      default:
        break;
    }
  },
});

/** A seat by its name or any former name. */
export const seatNamed = (state: SeatsState, name: string): SeatState | undefined => {
  const id = state.names.get(name);
  return id === undefined ? undefined : state.byId.get(id);
};

export const seatById = (state: SeatsState, id: string): SeatState | undefined => state.byId.get(id);

/** Every seat, in the order it was first defined or declared. */
export const allSeats = (state: SeatsState): IterableIterator<SeatState> => state.byId.values();

export const holderOf = (state: SeatsState, seatId: string, scopeKey: string): AssignmentRef | undefined => state.holdings.get(holdingKey(seatId, scopeKey));

/** Every holding: the seat, the scope it is held in, and its holder. */
export function* allHoldings(state: SeatsState): Generator<Holding> {
  for (const [key, holder] of state.holdings) yield holdingAt(key, holder);
}

/** What one assignment holds. */
export const heldBy = (state: SeatsState, ref: AssignmentRef): Holding[] =>
  [...(state.byHolder.get(holderKey(ref)) ?? [])].flatMap((key) => {
    const holder = state.holdings.get(key);
    return holder ? [holdingAt(key, holder)] : [];
  });
