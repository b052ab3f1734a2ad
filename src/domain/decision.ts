import type { ProposedEvent } from './events/envelope.js';

/** What a command decided: the events for the one aggregate it is about (none: nothing to change). */
export interface Decision {
  aggregate: string;
  events: ProposedEvent[];
  /** what to tell the operator, e.g. "gitea registered as definition version 2" */
  summary: string;
}
