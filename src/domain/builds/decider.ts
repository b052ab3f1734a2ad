import { z } from 'zod';
import type { Decision } from '../decision.js';
import { moduleAggregate } from '../catalogue/events.js';
import { moduleNamed, modulesByName, registeredModules } from '../catalogue/state.js';
import type { MeshState } from '../mesh/state.js';
import { holderOf, seatNamed } from '../seats/state.js';
import { Refusal } from '../refusal.js';
import { BuildFailed, BuildSubmitted, BuildSucceeded, ROLLOUT_POLICIES, RolloutPolicySet, SourceMoved, VersionDeployed, VersionKept, baseSchema, buildAggregate, sourceAggregate, sourceKey, sourceRefSchema, type Base, type SourceRef } from './events.js';
import { assessGraph, type Assessment, type GraphInput } from './graph.js';
import { buildProblemsOf, buildStandingsOf } from './standing.js';
import { policyOf } from './state.js';

// The rules of builds, judged against the whole mesh: a branch moving, a build submitted, its
// outcome recorded, and the policy a new version rolls out by.

export const moveSourceSchema = z.strictObject({ type: z.literal('move-source'), source: sourceRefSchema, ref: z.string(), commit: z.string(), heardFrom: z.string() });
export type MoveSource = z.infer<typeof moveSourceSchema>;

/** `mesh module moved MODULE COMMIT`: the same act as the mesh-git holder's pushed, for the module's repository and branch. */
export const moveModuleSchema = z.strictObject({ type: z.literal('move-module'), module: z.string(), commit: z.string(), heardFrom: z.string() });
export type MoveModule = z.infer<typeof moveModuleSchema>;

export const submitBuildSchema = z.strictObject({
  type: z.literal('submit-build'),
  module: z.string(),
  buildId: z.string(),
  registerOnly: z.boolean(),
  /** an operator's request builds even a current module; the coordinator's builds only stale ones */
  requestedBy: z.enum(['operator', 'coordinator']),
});
export type SubmitBuild = z.infer<typeof submitBuildSchema>;

export const recordBuildSchema = z.strictObject({
  type: z.literal('record-build'),
  buildId: z.string(),
  module: z.string(),
  commit: z.string(),
  outcome: z.discriminatedUnion('kind', [
    z.strictObject({ kind: z.literal('built'), digest: z.string(), bases: z.array(baseSchema) }),
    z.strictObject({ kind: z.literal('failed'), reason: z.string(), output: z.string() }),
  ]),
});
export type RecordBuild = z.infer<typeof recordBuildSchema>;

export const setRolloutPolicySchema = z.strictObject({ type: z.literal('set-rollout-policy'), module: z.string(), policy: z.enum(ROLLOUT_POLICIES) });
export type SetRolloutPolicy = z.infer<typeof setRolloutPolicySchema>;

/** `mesh module keep MODULE --reason TEXT`: what the module's nodes run is intended, though its source moved on or its newest build failed. */
export const keepVersionSchema = z.strictObject({ type: z.literal('keep-version'), module: z.string(), reason: z.string() });
export type KeepVersion = z.infer<typeof keepVersionSchema>;

/** A version as `mesh graph` prints it: its artifact digest, or a prefix of it (`sha256:` optional). */
export const VERSION_PATTERN = /^(?:sha256:)?[0-9a-f]{4,64}$/;

/** `mesh module deploy MODULE VERSION`: roll out a version the mesh built and recorded (under the `record` policy). */
export const deployVersionSchema = z.strictObject({
  type: z.literal('deploy-version'),
  module: z.string().min(1),
  version: z.string().regex(VERSION_PATTERN, 'a version is an artifact digest (sha256:…) or a prefix of one, at least 4 hexadecimal digits, as mesh graph prints it'),
});
export type DeployVersion = z.infer<typeof deployVersionSchema>;

export type BuildCommand = MoveSource | MoveModule | SubmitBuild | RecordBuild | SetRolloutPolicy | KeepVersion | DeployVersion;

export const graphInputOf = (state: MeshState): GraphInput => ({
  modules: modulesByName(state.catalogue),
  builds: state.builds,
  seatHeld: (name) => {
    const seat = seatNamed(state.seats, name);
    return seat !== undefined && holderOf(state.seats, seat.id, 'mesh') !== undefined;
  },
});

const moduleRefusal = (what: string, module: string, why: string, remedy: string): Refusal => new Refusal(what, [{ what: module, why, remedy }]);

/** A command about a module the catalogue does not hold. */
const noSuchModule = (what: string, module: string, remedy: string): Refusal => new Refusal(what, [{ what: module, why: 'no such module is registered', remedy, missing: 'module' }]);

const decideMoveSource = (command: MoveSource, state: MeshState): Decision => {
  const key = sourceKey(command.source, command.ref);
  const aggregate = sourceAggregate(command.source, command.ref);
  const moved = [...registeredModules(state.catalogue)].filter((m) => m.manifest.source && sourceKey('seat' in m.manifest.source ? { seat: m.manifest.source.seat, repository: m.manifest.source.repository } : { url: m.manifest.source.url }, m.manifest.source.ref) === key).map((m) => m.name).sort();
  if (state.builds.heads.get(key)?.commit === command.commit) return { aggregate, events: [], summary: `${key} is already at ${command.commit}` };
  return {
    aggregate,
    events: [{ type: SourceMoved.type, data: { source: command.source, ref: command.ref, commit: command.commit, heardFrom: command.heardFrom } }],
    summary: `${key} moved to ${command.commit}; built from it: ${moved.join(', ') || 'no module'}`,
  };
};

const decideMoveModule = (command: MoveModule, state: MeshState): Decision => {
  const module = moduleNamed(state.catalogue, command.module);
  if (!module) throw noSuchModule(`moving module ${command.module}`, command.module, 'register it first: mesh module register <manifest.json>');
  const source = module.manifest.source;
  if (!source) throw moduleRefusal(`moving module ${command.module}`, command.module, 'its manifest names no source', 'register it with a source: mesh module register <manifest.json> --source …');
  const ref: SourceRef = 'seat' in source ? { seat: source.seat, repository: source.repository } : { url: source.url };
  return decideMoveSource({ type: 'move-source', source: ref, ref: source.ref, commit: command.commit, heardFrom: command.heardFrom }, state);
};

const refusalFor = (assessment: Assessment): string | undefined => {
  switch (assessment.status) {
    case 'not-built':
      return 'its manifest has no build section: it is not built by the mesh';
    case 'waiting':
      return `it stands on ${assessment.on.join(', ')}, which must be built first (${assessment.roots.join('; ')})`;
    case 'blocked':
      return assessment.why;
    default:
      return undefined;
  }
};

const decideSubmitBuild = (command: SubmitBuild, state: MeshState): Decision => {
  const what = `building module ${command.module}`;
  const module = moduleNamed(state.catalogue, command.module);
  if (!module) throw noSuchModule(what, command.module, 'register it first: mesh module register <manifest.json>');
  const assessments = assessGraph(graphInputOf(state));
  const assessment = assessments.get(command.module) as Assessment;
  const aggregate = buildAggregate(command.module);
  if (assessment.status === 'building') return { aggregate, events: [], summary: `${command.module} is already being built (${assessment.buildId}, commit ${assessment.commit})` };
  if (command.requestedBy === 'coordinator' && assessment.status !== 'stale') return { aggregate, events: [], summary: `${command.module} is ${assessment.status}: nothing submitted` };
  const refused = refusalFor(assessment);
  if (refused) throw moduleRefusal(what, command.module, refused, assessment.status === 'waiting' ? `build ${assessment.on.join(', ')} first` : 'fix that, then build again');

  // A current or failed module is built again on request, from what a build would be handed now.
  const plan = assessment.status === 'stale' ? assessment.plan : planOf(state, command.module);
  if (!plan) throw moduleRefusal(what, command.module, 'no commit of its source is known', `say one: mesh module moved ${command.module} COMMIT`);
  const source = module.manifest.source;
  if (source && 'seat' in source && !graphInputOf(state).seatHeld(source.seat)) {
    throw moduleRefusal(what, command.module, `${source.seat} is unheld: the clone address is composed from where its holder runs`, `hand ${source.seat} to a module: mesh seat handover ${source.seat} --to NODE/MODULE`);
  }
  return {
    aggregate,
    events: [
      {
        type: BuildSubmitted.type,
        data: {
          buildId: command.buildId,
          module: command.module,
          definitionVersion: module.definitionVersion,
          ...plan,
          registerOnly: command.registerOnly,
          reason: assessment.status === 'stale' ? assessment.reasons.join('; ') : `requested (${assessment.status})`,
        },
      },
    ],
    summary: `build ${command.buildId} of ${command.module} at ${plan.commit} submitted to mesh-build-machine`,
  };
};

/** What a build of a settled module would be handed now: its head commit and its bases' newest artifacts. */
const planOf = (state: MeshState, name: string) => {
  const module = moduleNamed(state.catalogue, name);
  const build = module?.manifest.build;
  const source = module?.manifest.source;
  if (!module || !build || !source) return undefined;
  const ref: SourceRef = 'seat' in source ? { seat: source.seat, repository: source.repository } : { url: source.url };
  const commit = state.builds.heads.get(sourceKey(ref, source.ref))?.commit ?? state.builds.latest.get(name)?.commit;
  if (!commit) return undefined;
  const bases: Base[] = build.on.map((base) => ({ name: base, digest: base.startsWith('sha256:') ? base : (state.builds.latest.get(base)?.digest ?? '') }));
  return { commit, source: ref, path: source.path, recipe: build.recipe, output: build.output, bases };
};

const decideRecordBuild = (command: RecordBuild, state: MeshState): Decision => {
  const aggregate = buildAggregate(command.module);
  const build = state.builds.builds.get(command.buildId);
  if (!build || build.module !== command.module) {
    // The fold keeps the unfinished builds and each module's newest: any other was never submitted, or finished before that one.
    throw moduleRefusal(
      `recording build ${command.buildId}`,
      command.module,
      `no build ${command.buildId} of ${command.module} is waiting for its outcome: it was never submitted, or it finished before ${command.module}'s newest build`,
      `builds are recorded only for jobs the mesh submitted and once; mesh graph ${command.module} shows its builds`,
    );
  }
  if (build.status !== 'submitted') return { aggregate, events: [], summary: `build ${command.buildId} was already recorded as ${build.status}` };
  if (command.outcome.kind === 'failed') {
    return {
      aggregate,
      events: [{ type: BuildFailed.type, data: { buildId: command.buildId, module: command.module, commit: command.commit, reason: command.outcome.reason, output: command.outcome.output } }],
      summary: `build ${command.buildId} of ${command.module} failed: ${command.outcome.reason}`,
    };
  }
  const { digest, bases } = command.outcome;
  const upgrade = state.builds.latest.get(command.module)?.digest !== digest;
  const rollOut = !build.registerOnly && policyOf(state.builds, command.module) === 'roll-out' && state.builds.deployed.get(command.module) !== digest;
  return {
    aggregate,
    events: [{ type: BuildSucceeded.type, data: { buildId: command.buildId, module: command.module, commit: command.commit, digest, bases, upgrade, rollOut } }],
    summary: `${command.module} built at ${command.commit}: ${digest}${upgrade ? '' : ' (byte-identical: not an upgrade)'}${rollOut ? ', rolling out' : ''}`,
  };
};

const decideSetRolloutPolicy = (command: SetRolloutPolicy, state: MeshState): Decision => {
  if (!moduleNamed(state.catalogue, command.module)) throw noSuchModule(`setting the rollout of ${command.module}`, command.module, 'register it first');
  const aggregate = moduleAggregate(command.module);
  if (policyOf(state.builds, command.module) === command.policy && state.builds.policies.has(command.module)) return { aggregate, events: [], summary: `${command.module} already rolls out by ${command.policy}` };
  return { aggregate, events: [{ type: RolloutPolicySet.type, data: { module: command.module, policy: command.policy } }], summary: `${command.module}'s new versions now ${command.policy === 'roll-out' ? 'roll out to its nodes' : 'are recorded only'}` };
};

const decideKeepVersion = (command: KeepVersion, state: MeshState): Decision => {
  const subject = `keeping the version ${command.module} runs`;
  const module = moduleNamed(state.catalogue, command.module);
  if (!module) throw noSuchModule(subject, command.module, 'name a registered module: mesh module list');
  const reason = command.reason.trim();
  if (reason === '') throw new Refusal(subject, [{ what: '--reason', why: 'a kept version says why: the next operator reads it in mesh status and mesh history', remedy: `mesh module keep ${command.module} --reason "…"` }]);
  const [standing] = buildStandingsOf([module], state.builds);
  if (!standing) throw moduleRefusal(subject, command.module, 'it is not built by the mesh (its manifest has no build and source)', 'nothing to keep: its version is the one it registers');
  const failedBuild = standing.newest?.status === 'failed' ? standing.newest.buildId : null;
  const moved = standing.head !== undefined && standing.head !== standing.built && standing.newest?.status !== 'submitted';
  if (buildProblemsOf([standing]).length === 0) {
    throw moduleRefusal(subject, command.module, 'its nodes already run what its source says (no failed build, no move without a build)', 'nothing to keep');
  }
  return {
    aggregate: moduleAggregate(command.module),
    events: [{ type: VersionKept.type, data: { module: command.module, head: standing.head ?? null, failedBuild, reason } }],
    summary: `${command.module} keeps the version it runs${standing.built ? ` (from ${standing.built.slice(0, 12)})` : ''}${failedBuild ? `, though build ${failedBuild} failed` : ''}${moved && standing.head ? `, though its source is at ${standing.head.slice(0, 12)}` : ''}: ${reason}`,
  };
};

const decideDeployVersion = (command: DeployVersion, state: MeshState): Decision => {
  const subject = `deploying ${command.version} of ${command.module}`;
  if (!moduleNamed(state.catalogue, command.module)) throw noSuchModule(subject, command.module, 'name a registered module: mesh module list');
  const prefix = command.version.startsWith('sha256:') ? command.version : `sha256:${command.version}`;
  // The versions the mesh keeps for a module are its newest build's and the one its nodes run.
  const recorded = [...state.builds.versions.values()].filter((v) => v.module === command.module).sort((a, b) => b.seq - a.seq);
  const listed = recorded.map((v) => `${v.digest} (build ${v.buildId}, commit ${v.commit.slice(0, 12)})`).join('; ') || 'none';
  const matches = recorded.filter((v) => v.digest.startsWith(prefix));
  if (matches.length === 0) {
    throw moduleRefusal(subject, command.module, `${command.version} is not a version the mesh built and recorded for ${command.module}`, `deploy one of its recorded versions: ${listed}`);
  }
  if (matches.length > 1) throw moduleRefusal(subject, command.module, `${command.version} is the start of more than one of its versions`, `give more of the digest: ${listed}`);
  const version = matches[0] as (typeof matches)[number];
  const aggregate = moduleAggregate(command.module);
  const replaced = state.builds.deployed.get(command.module) ?? null;
  if (replaced === version.digest) return { aggregate, events: [], summary: `${command.module}'s nodes already run ${version.digest}: nothing to deploy` };
  return {
    aggregate,
    events: [{ type: VersionDeployed.type, data: { module: command.module, digest: version.digest, commit: version.commit, buildId: version.buildId, replaced } }],
    summary: `${command.module} rolls out ${version.digest} (build ${version.buildId}, commit ${version.commit.slice(0, 12)})${replaced ? `, replacing ${replaced}` : ''}`,
  };
};

export const decideBuildCommand = (command: BuildCommand, state: MeshState): Decision => {
  switch (command.type) {
    case 'move-source':
      return decideMoveSource(command, state);
    case 'move-module':
      return decideMoveModule(command, state);
    case 'submit-build':
      return decideSubmitBuild(command, state);
    case 'record-build':
      return decideRecordBuild(command, state);
    case 'set-rollout-policy':
      return decideSetRolloutPolicy(command, state);
    case 'keep-version':
      return decideKeepVersion(command, state);
    case 'deploy-version':
      return decideDeployVersion(command, state);
    default: {
      const unreachable: never = command;
      throw new Error(`unknown command ${JSON.stringify(unreachable)}`);
    }
  }
};

