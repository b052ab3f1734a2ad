import { z } from 'zod';
import { defineEvent } from '../events/registry.js';

// void.<seq>: an operator's word that the commit at a sequence, which does not read or does not
// verify as the writer's, is to be passed by. One aggregate per voided sequence, under one kind,
// so a reader held at a sequence finds every void with one small read of `void.>`, and a sequence
// is voided once (the second void of it finds the aggregate taken).

export const VOIDS_KIND = 'void';

export const voidAggregate = (seq: number): string => `${VOIDS_KIND}.${seq}`;

export const LogVoided = defineEvent({
  type: 'log.voided',
  version: 1,
  schema: z.strictObject({
    /** the LOG sequence passed by */
    seq: z.number().int().positive(),
    /** the aggregate the voided message was stored under (its subject, after the log's prefix) */
    aggregate: z.string().min(1),
    /** what the operator said */
    reason: z.string().min(1),
    /** what the controller found wrong with it when the void was decided */
    problem: z.string().min(1),
  }),
});

export const logEvents = [LogVoided] as const;
