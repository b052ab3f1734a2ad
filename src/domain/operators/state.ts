import { defineSlice } from '../slice.js';

// Operators by name, with the key their commands are signed with, and whether they were revoked.

export interface OperatorState {
  operator: string;
  publicKey: string;
  revoked: boolean;
}

export interface OperatorsState {
  byName: Map<string, OperatorState>;
}

export const operatorsSlice = defineSlice({
  eventTypes: ['operator.added', 'operator.revoked'] as const,
  empty: (): OperatorsState => ({ byName: new Map() }),
  evolve(state, event) {
    switch (event.type) {
      case 'operator.added':
        state.byName.set(event.data.operator, { operator: event.data.operator, publicKey: event.data.publicKey, revoked: false });
        break;
      case 'operator.revoked': {
        const operator = state.byName.get(event.data.operator);
        if (operator) operator.revoked = true;
        break;
      }
      default:
        break;
    }
  },
});

export const operatorNamed = (state: OperatorsState, operator: string): OperatorState | undefined => state.byName.get(operator);

export const allOperators = (state: OperatorsState): IterableIterator<OperatorState> => state.byName.values();
