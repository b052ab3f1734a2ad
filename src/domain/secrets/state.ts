import { defineSlice } from '../slice.js';

// The secrets the log names: for each, what it is for, its current version and who may have it.

export interface SecretState {
  secret: string;
  purpose: string;
  version: number;
  recipients: string[];
  /** the log sequence of its last change */
  seq: number;
}

export interface SecretsState {
  byName: Map<string, SecretState>;
}

export const secretsSlice = defineSlice({
  eventTypes: ['secret.made', 'secret.shared'] as const,
  empty: (): SecretsState => ({ byName: new Map() }),
  evolve(state, event) {
    switch (event.type) {
      case 'secret.made':
        state.byName.set(event.data.secret, { secret: event.data.secret, purpose: event.data.purpose, version: event.data.version, recipients: [...event.data.recipients], seq: event.seq });
        return;
      case 'secret.shared': {
        const known = state.byName.get(event.data.secret);
        if (known && known.version === event.data.version) state.byName.set(event.data.secret, { ...known, recipients: [...event.data.recipients], seq: event.seq });
        return;
      }
    }
  },
});

export const secretNamed = (state: SecretsState, name: string): SecretState | undefined => state.byName.get(name);

export const allSecrets = (state: SecretsState): IterableIterator<SecretState> => state.byName.values();
