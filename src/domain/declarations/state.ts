import { defineSlice } from '../slice.js';

// What the log says about declarations that could not be composed: the last refusal stated for
// each node, so a refusal is stated once and its end can be told.

export interface DeclarationRefusal {
  reason: string;
  /** the log sequence the refusal was stated at */
  seq: number;
  /** the log sequence the refused composition was derived at */
  derivedFromSeq: number;
}

export interface DeclarationsState {
  refusals: Map<string, DeclarationRefusal>;
}

export const declarationsSlice = defineSlice({
  eventTypes: ['declaration.refused'] as const,
  empty: (): DeclarationsState => ({ refusals: new Map() }),
  evolve(state, event) {
    state.refusals.set(event.data.node, { reason: event.data.reason, seq: event.seq, derivedFromSeq: event.data.derivedFromSeq });
  },
});

/** The last refusal stated for a node's declaration, if one was. */
export const refusalStatedFor = (state: DeclarationsState, node: string): DeclarationRefusal | undefined => state.refusals.get(node);

export const statedRefusals = (state: DeclarationsState): IterableIterator<[string, DeclarationRefusal]> => state.refusals.entries();
