import { z } from 'zod';
import { defineEvent, isRecord } from '../events/registry.js';

export const nodeAggregate = (node: string): string => `node.${node}`;

export const DEFAULT_NODE_ROOT = '/var/lib/mesh';

// v1 {node, root}; v2 added the address other nodes reach it at (null: its name).
export const NodeAdded = defineEvent({
  type: 'node.added',
  version: 2,
  schema: z.strictObject({
    node: z.string().min(1),
    /** where this node keeps modules' directories: <root>/<module>/<requirement> unless placed */
    root: z.string().regex(/^\//),
    /** the host or IP address other nodes reach it at; null: its name resolves */
    address: z.string().min(1).nullable(),
  }),
  upcasters: { 1: (data) => (isRecord(data) ? { ...data, address: null } : data) },
});

export const nodeEvents = [NodeAdded] as const;
