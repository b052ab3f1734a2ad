import type { ResourceKind } from '../domain/declarations/declaration.js';

// What the agent remembers about each resource it applied, kept on disk so a restarted agent
// knows what it started, what it found, and which declaration of a resource it last acted on.

interface RecordBase {
  /** stable for the life of the record, whatever key the resource is declared under */
  id: string;
  key: string;
  module: string;
  /** what the resource is on the machine (see resource-identity.ts) */
  identity: string;
  /** sha256 of the resource's declaration, as last applied */
  digest: string;
}

/**
 * `found`: it was already there when first declared, so undeclaring leaves it (ADR 0118);
 * `foundAs`: its owner and mode then, recorded before the agent changed them and given back on
 * undeclare (absent in a record written before the agent kept them).
 */
export interface DirectoryRecord extends RecordBase {
  kind: 'directory';
  path: string;
  found: boolean;
  foundAs?: { uid: number; gid: number; mode: number };
}

/** `written`: sha256 of what the agent wrote; a found file's original is kept in found/<id>. */
export interface FileRecord extends RecordBase {
  kind: 'file';
  path: string;
  written: string;
  found: boolean;
}

/** `marker`: the id between its markers; `before`: the region that stood under them before the first apply (put back on undeclare). */
export interface RegionRecord extends RecordBase {
  kind: 'region';
  path: string;
  marker: string;
  before: string | null;
}

/**
 * `found`: the unit as the agent first found it (ADR 0118, R118.2), never overwritten: running,
 * and enabled at boot (null until a declaration set it). `started`: whether the agent ever started
 * it. `triggers`: the digest of what it
 * reloads on, as last applied.
 */
export interface ServiceRecord extends RecordBase {
  kind: 'service';
  unit: string;
  found: { running: boolean; enabled: boolean | null };
  /** the mesh has started it since: only then does undeclaring a unit found stopped stop it */
  started: boolean;
  triggers: string;
}

/** `refreshed`: whether the machine's bundles were rebuilt after it was last written. */
export interface TrustAnchorRecord extends RecordBase {
  kind: 'trust-anchor';
  path: string;
  written: string;
  refreshed: boolean;
}

/** `written`: sha256 of the file as the agent wrote it from the vault's answer; `version`: the secret's version it holds. */
export interface SecretRecord extends RecordBase {
  kind: 'secret';
  path: string;
  written?: string;
  version?: number;
  /** sha256 of `<path>.next` as written, while a rotation has this node hold a second version */
  nextWritten?: string;
}

/** `written`: sha256 of the identity file as the agent wrote it from the controller's answer. */
export interface BusIdentityRecord extends RecordBase {
  kind: 'bus-identity';
  path: string;
  written: string;
}

/** pid and start time together name one process: a pid alone is reused. */
export interface RunningProcess {
  pid: number;
  /** field 22 of /proc/<pid>/stat: clock ticks after boot; a reused pid has another */
  startTicks: string;
  startedAt: string;
  cmdline: string;
}

export interface ProcessRecord extends RecordBase {
  kind: 'process';
  running: RunningProcess | null;
  /** exits in a row without staying up for the stable period */
  restarts: number;
  lastExit: string | null;
}

export interface RunOnceRecord extends RecordBase {
  kind: 'run-once';
  succeeded: boolean;
  /** "exited with status 3: …output tail…" when it failed */
  failure: string | null;
  attempts: number;
  finishedAt: string;
  /** a failed step is not tried again before this */
  retryAfter: string | null;
}

/** Only containers the agent created (labelled with their identity) are recorded. */
export interface ContainerRecord extends RecordBase {
  kind: 'container';
  name: string;
}

export type ResourceRecord = DirectoryRecord | FileRecord | RegionRecord | ServiceRecord | TrustAnchorRecord | SecretRecord | BusIdentityRecord | ProcessRecord | RunOnceRecord | ContainerRecord;

export type RecordOf<K extends ResourceKind> = Extract<ResourceRecord, { kind: K }>;
