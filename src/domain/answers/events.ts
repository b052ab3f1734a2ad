import { z } from 'zod';
import { defineEvent } from '../events/registry.js';
import { assignmentRef } from '../seats/events.js';

// Issue 124 of the seeds: a provider derives some values per consumer (the bucket it made from the
// consumer's login) and must be able to tell the consumer. Its answer is recorded on the
// consumer's requirement: `consumer.<node>.<module>.<requirement>`.

export const consumerAggregate = (consumer: { node: string; module: string }, requirement: string): string => `consumer.${consumer.node}.${consumer.module}.${requirement}`;

export const ConsumerAnswered = defineEvent({
  type: 'consumer.answered',
  version: 1,
  schema: z.strictObject({
    provider: assignmentRef,
    consumer: assignmentRef,
    /** the consumer's requirement the provider answers */
    requirement: z.string().min(1),
    /** the values it derived for this consumer, by contract field; never empty, never a secret */
    values: z.record(z.string(), z.string().min(1)),
  }),
});

export const answerEvents = [ConsumerAnswered] as const;
