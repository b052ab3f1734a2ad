import { z } from 'zod';
import { defineEvent } from '../events/registry.js';

export const nodeAggregate = (node: string): string => `node.${node}`;

export const DEFAULT_NODE_ROOT = '/var/lib/mesh';

export const NodeAdded = defineEvent({
  type: 'node.added',
  version: 1,
  schema: z.strictObject({
    node: z.string().min(1),
    /** where this node keeps modules' directories: <root>/<module>/<requirement> unless placed */
    root: z.string().regex(/^\//),
  }),
});

export const nodeEvents = [NodeAdded] as const;
