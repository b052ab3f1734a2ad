import type { ResourceKind } from './declaration.js';

// The kinds a node's agent must have said it applies before it is sent one. A host older than a
// kind refuses the whole declaration that carries it (issue 128 of the seeds: "a host older than
// the block mode refuses the whole declaration on an unknown `into`"), so the control plane
// withholds the declaration instead, and says why (declaration.refused), until the node's agent
// reports the capability. The kinds every agent has applied from the start need none.

export const CAPABILITY_KINDS = ['region', 'service', 'trust-anchor'] as const satisfies readonly ResourceKind[];

export type Capability = (typeof CAPABILITY_KINDS)[number];

const NEEDS_CAPABILITY: ReadonlySet<ResourceKind> = new Set(CAPABILITY_KINDS);

/** Whether a node must have reported `kind` before it is sent a resource of it. */
export const needsCapability = (kind: ResourceKind): kind is Capability => NEEDS_CAPABILITY.has(kind);
