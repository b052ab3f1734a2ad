import { defineSlice } from '../slice.js';

// Operators by name, with the key their commands are signed with, and whether they were revoked;
// and the window their commands must be signed within, once one was set (command-window.ts).

export interface OperatorState {
  operator: string;
  publicKey: string;
  revoked: boolean;
}

export interface OperatorsState {
  byName: Map<string, OperatorState>;
  /** the window set last, and the log sequence it was set at; null: the default */
  commandWindow: { seconds: number; seq: number } | null;
}

export const operatorsSlice = defineSlice({
  eventTypes: ['operator.added', 'operator.revoked', 'operators.command-window-set'] as const,
  empty: (): OperatorsState => ({ byName: new Map(), commandWindow: null }),
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
      case 'operators.command-window-set':
        state.commandWindow = { seconds: event.data.seconds, seq: event.seq };
        break;
      default:
        break;
    }
  },
});

export const operatorNamed = (state: OperatorsState, operator: string): OperatorState | undefined => state.byName.get(operator);

export const allOperators = (state: OperatorsState): IterableIterator<OperatorState> => state.byName.values();
