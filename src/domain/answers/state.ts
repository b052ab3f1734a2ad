import { assignmentKey } from '../assignments/state.js';
import { defineSlice } from '../slice.js';
import type { AssignmentRef } from '../seats/events.js';

// What providers answered each consumer's requirement: the newest answer, and who gave it, so a
// requirement answered since by another provider reads nothing stale.

export interface ProviderAnswer {
  provider: AssignmentRef;
  values: Record<string, string>;
}

export interface AnswersState {
  /** `<node>/<module>` of the consumer → requirement → the answer */
  byConsumer: Map<string, Map<string, ProviderAnswer>>;
}

export const answersSlice = defineSlice({
  eventTypes: ['consumer.answered', 'assignment.removed'] as const,
  empty: (): AnswersState => ({ byConsumer: new Map() }),
  evolve(state, event) {
    if (event.type === 'assignment.removed') {
      state.byConsumer.delete(assignmentKey(event.data));
      return;
    }
    const key = assignmentKey(event.data.consumer);
    let answers = state.byConsumer.get(key);
    if (!answers) state.byConsumer.set(key, (answers = new Map()));
    answers.set(event.data.requirement, { provider: event.data.provider, values: event.data.values });
  },
});

/** What `provider` answered the consumer's requirement, if it has (an answer by another provider is none). */
export const answerFor = (state: AnswersState, consumer: AssignmentRef, requirement: string, provider: AssignmentRef): ProviderAnswer | undefined => {
  const answer = state.byConsumer.get(assignmentKey(consumer))?.get(requirement);
  return answer && answer.provider.node === provider.node && answer.provider.module === provider.module ? answer : undefined;
};
