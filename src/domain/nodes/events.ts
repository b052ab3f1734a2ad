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

// A cordoned node takes no new assignment; what it runs keeps running (kubectl cordon). Uncordoned,
// it takes them again.
export const NodeCordoned = defineEvent({
  type: 'node.cordoned',
  version: 1,
  schema: z.strictObject({ node: z.string().min(1) }),
});

export const NodeUncordoned = defineEvent({
  type: 'node.uncordoned',
  version: 1,
  schema: z.strictObject({ node: z.string().min(1) }),
});

// A node taken out of the mesh, with nothing assigned to it any more: its host's bus identity and
// every enrolment token made for it or spent by it are retired with it (docs/decisions.md, "Removing
// a node"). Added again, it is a new machine that must enrol.
export const NodeRemoved = defineEvent({
  type: 'node.removed',
  version: 1,
  schema: z.strictObject({ node: z.string().min(1) }),
});

// The DNS domain a node's public names are under: a route `web` of a module on it is
// `web.<domain>` (ADR 0007). An installation's fact, so it lives on the node, never in a manifest.
export const NodePublicDomainSet = defineEvent({
  type: 'node.public-domain-set',
  version: 1,
  schema: z.strictObject({ node: z.string().min(1), domain: z.string().min(1) }),
});

export const nodeEvents = [NodeAdded, NodeCordoned, NodeUncordoned, NodeRemoved, NodePublicDomainSet] as const;
