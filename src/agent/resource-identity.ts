import { createHash } from 'node:crypto';
import { sha256Digest } from '../domain/canonical.js';
import type { Resource } from '../domain/declarations/declaration.js';
import type { ResourceRecord } from './records.js';

// Which record a declared resource is, across versions of the declaration.
//
// The rule: a resource is matched to a record by its IDENTITY — what it is on the machine — and
// the key is only preferred among equals. So renaming a key stops nothing the new key still
// runs, and a change of any field that makes it a different thing replaces it.
//
// - service: the unit; two resources acting on one unit are refused as two on one path are.
// - region: the file and its markers (the key), since a shared file holds a region per module.
// - directory, file, secret, bus-identity: the kind and the path. The same path under a new key (or with a new
//   mode or content) is the same thing, converged in place; data is never moved or re-created.
// - process, container, run-once: the sha256 of the whole declaration except its key, plus the
//   digests of the resources it restarts on. Any changed field (command, env value, user, image,
//   mount, what a step reads…) is a different process: the old one is undeclared (stopped) and
//   the new one applied.

export const sha256 = (text: string | Buffer): string => `sha256:${createHash('sha256').update(text).digest('hex')}`;

/** Every field of the resource but its key: the key is where it is filed, not what it is. */
export const resourceDigest = (resource: Resource): string => sha256Digest({ ...resource, key: undefined });

const PATH_KINDS: ReadonlySet<Resource['kind']> = new Set(['directory', 'file', 'secret', 'bus-identity', 'service']);

export const resourceIdentity = (resource: Resource, digests: ReadonlyMap<string, string>): string => {
  switch (resource.kind) {
    case 'directory':
    case 'file':
    case 'secret':
    case 'bus-identity':
      return `${resource.kind}:${resource.path}`;
    // Several modules may each own a region of one shared file: the file and the markers say which.
    case 'region':
      return `region:${resource.path}#${resource.key}`;
    // A unit is what it is whatever its settings: a renamed id, or a changed state, acts on the same unit (ADR 0118).
    case 'service':
      return `service:${resource.unit}`;
    // Its file is named for its key (the agent decides where): a rotated root is the same anchor, rewritten.
    case 'trust-anchor':
      return `trust-anchor:${resource.key}`;
    case 'process':
    case 'container':
      return sha256Digest({ self: resourceDigest(resource), restartOn: resource.restartOn.map((key) => digests.get(key) ?? null) });
    case 'run-once':
      return resourceDigest(resource);
    default: {
      const unreachable: never = resource;
      return unreachable;
    }
  }
};

export interface Desired {
  resource: Resource;
  identity: string;
  digest: string;
}

export interface Matching {
  /** declared key → the record it continues, if any */
  records: Map<string, ResourceRecord>;
  /** records nothing declared continues: to be undeclared */
  leftovers: ResourceRecord[];
  /** declared key → the key that already claims the same identity (two resources, one path) */
  duplicates: Map<string, string>;
}

export const matchRecords = (desired: readonly Desired[], records: readonly ResourceRecord[]): Matching => {
  const unclaimed = new Map(records.map((r) => [r.id, r]));
  const matched = new Map<string, ResourceRecord>();
  const duplicates = new Map<string, string>();
  const claimedBy = new Map<string, string>();
  for (const d of desired) {
    const first = claimedBy.get(d.identity);
    // Path kinds cannot be two resources; identical processes under two keys are two processes.
    if (first !== undefined && PATH_KINDS.has(d.resource.kind)) duplicates.set(d.resource.key, first);
    else claimedBy.set(d.identity, d.resource.key);
  }
  const claim = (d: Desired, record: ResourceRecord | undefined): void => {
    if (!record || matched.has(d.resource.key) || duplicates.has(d.resource.key)) return;
    matched.set(d.resource.key, record);
    unclaimed.delete(record.id);
  };
  // Same identity under the same key first, then the same identity under another key (a rename).
  for (const d of desired) claim(d, [...unclaimed.values()].find((r) => r.identity === d.identity && r.key === d.resource.key));
  for (const d of desired) claim(d, [...unclaimed.values()].find((r) => r.identity === d.identity));
  return { records: matched, leftovers: [...unclaimed.values()], duplicates };
};
