import type { z } from 'zod';
import type { StoredMeshEvent } from '../registry.js';
import { defineSlice } from '../slice.js';
import type { Base, BuildSubmitted, RolloutPolicy } from './events.js';
import { ROLLOUT_POLICIES, sourceKey } from './events.js';

// What the log says about sources, builds and module versions: one fold, used by the mesh's rules
// (evolveMesh), by the build coordinator and by the projections, so all three judge alike.
//
// The fold keeps what the mesh's rules read, not the history: the builds not finished yet, each
// module's newest build, and each module's latest and deployed versions. A build that finished
// and is no longer its module's newest, and a version neither latest nor deployed, leave the fold
// — the builds projection and the log keep them — so the fold is as large as the mesh's modules,
// however many builds the log holds.

export type BuildRecord = z.infer<typeof BuildSubmitted.schema> & { submittedSeq: number } & (
    | { status: 'submitted' }
    | { status: 'succeeded'; digest: string; finishedSeq: number }
    | { status: 'failed'; reason: string; output: string; finishedSeq: number }
  );

export interface ModuleVersion {
  module: string;
  digest: string;
  /** the newest commit that produced it (a byte-identical rebuild keeps the digest, moves the commit) */
  commit: string;
  bases: Base[];
  buildId: string;
  seq: number;
}

export interface BuildsState {
  /** `sourceKey` → where the branch is now */
  heads: Map<string, { commit: string; seq: number }>;
  /** the builds not finished yet and each module's newest build (in the controller's fold); every build (read from the projection) */
  builds: Map<string, BuildRecord>;
  /** module → the id of its newest build submitted */
  newestBuild: Map<string, string>;
  /** each module's newest registered version */
  latest: Map<string, ModuleVersion>;
  /** the versions a module runs or would run — its latest and its deployed (in the fold); every version ever registered (read from the projection); keyed `<module>@<digest>` */
  versions: Map<string, ModuleVersion>;
  /** the artifact digest the nodes running a module are declared to run */
  deployed: Map<string, string>;
  policies: Map<string, RolloutPolicy>;
  /** module → what an operator kept its version against (the head and the failed build then) */
  kept: Map<string, KeptVersion>;
}

export interface KeptVersion {
  head: string | null;
  failedBuild: string | null;
  reason: string;
  seq: number;
}

export const emptyBuildsState = (): BuildsState => ({ heads: new Map(), builds: new Map(), newestBuild: new Map(), latest: new Map(), versions: new Map(), deployed: new Map(), policies: new Map(), kept: new Map() });

export const BUILD_EVENT_TYPES = ['source.moved', 'build.submitted', 'build.succeeded', 'build.failed', 'module.rollout-set', 'module.version-kept', 'module.version-deployed'] as const;

export const versionKey = (module: string, digest: string): string => `${module}@${digest}`;

/** The policy a module rolls out by: `roll-out` unless an operator said `record`. */
/** What a module's new versions do when no operator has set its policy. */
export const DEFAULT_ROLLOUT_POLICY: RolloutPolicy = 'roll-out';

export const policyOf = (state: BuildsState, module: string): RolloutPolicy => state.policies.get(module) ?? DEFAULT_ROLLOUT_POLICY;

/** A policy as stored (null or unknown: never set), as the module's builds follow it. */
export const rolloutPolicyOf = (stored: string | null): RolloutPolicy => ROLLOUT_POLICIES.find((policy) => policy === stored) ?? DEFAULT_ROLLOUT_POLICY;

/** Folds one build event, in place. Never throws; an event about an unknown build changes nothing. */
export const evolveBuilds = (state: BuildsState, event: StoredMeshEvent): BuildsState => {
  switch (event.type) {
    case 'source.moved': {
      const data = event.data;
      state.heads.set(sourceKey(data.source, data.ref), { commit: data.commit, seq: event.seq });
      break;
    }
    case 'build.submitted': {
      const data = event.data;
      const before = state.newestBuild.get(data.module);
      state.builds.set(data.buildId, { ...data, submittedSeq: event.seq, status: 'submitted' });
      state.newestBuild.set(data.module, data.buildId);
      if (before !== undefined && before !== data.buildId) forgetIfHistory(state, before);
      break;
    }
    case 'build.succeeded': {
      const data = event.data;
      const build = state.builds.get(data.buildId);
      if (!build || build.status !== 'submitted') break;
      state.builds.set(data.buildId, { ...build, status: 'succeeded', digest: data.digest, finishedSeq: event.seq });
      const version: ModuleVersion = { module: data.module, digest: data.digest, commit: data.commit, bases: data.bases, buildId: data.buildId, seq: event.seq };
      const latestBefore = state.latest.get(data.module)?.digest;
      const deployedBefore = state.deployed.get(data.module);
      state.latest.set(data.module, version);
      state.versions.set(versionKey(data.module, data.digest), version);
      if (data.rollOut) state.deployed.set(data.module, data.digest);
      for (const digest of new Set([latestBefore, deployedBefore])) if (digest !== undefined) forgetVersionIfHistory(state, data.module, digest);
      forgetIfHistory(state, data.buildId);
      break;
    }
    case 'build.failed': {
      const data = event.data;
      const build = state.builds.get(data.buildId);
      if (!build || build.status !== 'submitted') break;
      state.builds.set(data.buildId, { ...build, status: 'failed', reason: data.reason, output: data.output, finishedSeq: event.seq });
      forgetIfHistory(state, data.buildId);
      break;
    }
    case 'module.rollout-set': {
      const data = event.data;
      state.policies.set(data.module, data.policy);
      break;
    }
    case 'module.version-kept': {
      const data = event.data;
      state.kept.set(data.module, { head: data.head, failedBuild: data.failedBuild, reason: data.reason, seq: event.seq });
      break;
    }
    case 'module.version-deployed': {
      const data = event.data;
      const deployedBefore = state.deployed.get(data.module);
      state.deployed.set(data.module, data.digest);
      if (deployedBefore !== undefined) forgetVersionIfHistory(state, data.module, deployedBefore);
      break;
    }
    default:
      break;
  }
  return state;
};

/** A build leaves the fold once it is finished and its module has a newer one. */
const forgetIfHistory = (state: BuildsState, buildId: string): void => {
  const build = state.builds.get(buildId);
  if (build && build.status !== 'submitted' && state.newestBuild.get(build.module) !== buildId) state.builds.delete(buildId);
};

/** A version leaves the fold once it is neither its module's latest nor its deployed one. */
const forgetVersionIfHistory = (state: BuildsState, module: string, digest: string): void => {
  if (state.latest.get(module)?.digest !== digest && state.deployed.get(module) !== digest) state.versions.delete(versionKey(module, digest));
};

export const buildsSlice = defineSlice({
  eventTypes: BUILD_EVENT_TYPES,
  empty: emptyBuildsState,
  evolve: (state: BuildsState, event: StoredMeshEvent) => void evolveBuilds(state, event),
});

/** The artifact digest the nodes running a module are declared to run; null while none was deployed. */
export const deployedDigestOf = (state: BuildsState, module: string): string | null => state.deployed.get(module) ?? null;

/** Every build submitted and not yet finished, in the order submitted. */
export const unfinishedBuilds = (state: BuildsState): BuildRecord[] => [...state.builds.values()].filter((build) => build.status === 'submitted');

/** Where each followed source's branch is now, and the log sequence it was heard at. */
export const sourceHeads = (state: BuildsState): ReadonlyMap<string, { commit: string; seq: number }> => state.heads;
