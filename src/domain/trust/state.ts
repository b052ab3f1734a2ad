import { defineSlice } from '../slice.js';

// The mesh's trust root as the log says it is now: the newest root set, or none.

export interface TrustRoot {
  certificate: string;
  fingerprint: string;
  subject: string;
  validTo: string;
  /** the log sequence it was set at */
  seq: number;
}

export interface TrustState {
  root: TrustRoot | null;
}

export const trustSlice = defineSlice({
  eventTypes: ['trust.root-set'] as const,
  empty: (): TrustState => ({ root: null }),
  evolve(state, event) {
    state.root = { ...event.data, seq: event.seq };
  },
});

/** The root the mesh's machines are told to trust now, if one was set. */
export const currentTrustRoot = (state: TrustState): TrustRoot | null => state.root;
