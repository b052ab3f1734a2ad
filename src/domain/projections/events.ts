import { z } from 'zod';
import { defineEvent } from '../events/registry.js';

// projection.<name>: what the control plane states about its own read models. A projection that
// cannot apply a commit stops there; the controller records that once per projection, version
// and sequence, so the log says when the tables stopped following it, and why.

export const projectionAggregate = (projection: string): string => `projection.${projection}`;

export const ProjectionStalled = defineEvent({
  type: 'projection.stalled',
  version: 1,
  schema: z.strictObject({
    projection: z.string().min(1),
    version: z.number().int().positive(),
    /** the LOG sequence of the commit it cannot apply */
    seq: z.number().int().positive(),
    eventType: z.string().min(1),
    /** PostgreSQL's SQLSTATE when the database refused; null for a commit that does not decode */
    sqlstate: z.string().nullable(),
    error: z.string(),
  }),
});

export const projectionEvents = [ProjectionStalled] as const;
