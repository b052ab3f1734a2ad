import type { ProposedEvent, StoredEvent } from './events/envelope.js';

// A decider is pure: no I/O, no clock, no random ids. Time and ids arrive in the command.

export interface Decider<Command, State, Event extends ProposedEvent = ProposedEvent> {
  initialState(): State;
  /** The events a command leads to, or a thrown refusal (RefusedError / ValidationError). */
  decide(command: Command, state: State): readonly Event[];
  evolve(state: State, event: StoredEvent): State;
}
