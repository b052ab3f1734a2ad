import type { Decider } from '../../domain/decider.js';
import type { CommandMetadata, ProposedEvent, StoredEvent } from '../../domain/events/envelope.js';
import { ConcurrencyError } from '../../errors.js';
import type { EventLog } from './event-log.js';

// Where I/O meets a decider: read the aggregate, fold it, decide, append at the version read.
// A command already in the aggregate's history is answered with what it did then (its
// acknowledgement was lost; the retry must not act twice). Only a conflict is retried, a bounded
// number of times; every other error is the caller's.

export interface CommandOutcome<State> {
  state: State;
  version: number;
  events: StoredEvent[];
  /** True when the command had already been carried out: nothing new was appended. */
  duplicate: boolean;
}

export const handleCommand = async <Command, State, Event extends ProposedEvent>(
  log: EventLog,
  decider: Decider<Command, State, Event>,
  aggregate: string,
  command: Command,
  metadata: CommandMetadata,
  maxAttempts = 3,
): Promise<CommandOutcome<State>> => {
  for (let attempt = 1; ; attempt++) {
    const history = await log.readAggregate(aggregate);
    const state = history.events.reduce(decider.evolve, decider.initialState());
    const earlier = history.events.filter((event) => event.commandId === metadata.commandId);
    if (earlier.length > 0) return { state, version: history.version, events: earlier, duplicate: true };
    const decided = decider.decide(command, state);
    if (decided.length === 0) return { state, version: history.version, events: [], duplicate: false };
    try {
      const result = await log.append(aggregate, decided, history.version, metadata);
      return { state: result.events.reduce(decider.evolve, state), version: result.version, events: result.events, duplicate: result.duplicate };
    } catch (error) {
      if (!(error instanceof ConcurrencyError) || attempt >= maxAttempts) throw error;
    }
  }
};
