import { canonicalJson } from '../canonical.js';
import type { Manifest } from '../catalogue/manifest.js';
import type { Base, SourceRef } from './events.js';
import { sourceKey } from './events.js';
import { recipeProblem } from './recipe.js';
import type { BuildRecord, BuildsState, ModuleVersion } from './state.js';

// What must be built, judged from the versions the log holds. Staleness is by artifact digest,
// never by commit: a module is stale when its source moved to a commit it was not built from, or
// when a base's newest version is not the artifact it was built on. Ordering is not computed: a
// stale module whose bases are all settled is buildable; one standing on anything unsettled
// (stale, building, failed, waiting) waits on it, so a chain and a diamond need nothing special
// and a failed base is one failure, with its dependents waiting on it, not failed.

export interface GraphModule {
  name: string;
  definitionVersion: number;
  manifest: Manifest;
}

export interface GraphInput {
  modules: ReadonlyMap<string, GraphModule>;
  builds: BuildsState;
  /** whether a seat (by name) has a holder now: a source on a seat is cloned from where its holder runs */
  seatHeld: (seat: string) => boolean;
}

/** What a build of the module now would be handed. */
export interface BuildPlan {
  commit: string;
  source: SourceRef;
  path: string;
  recipe: string;
  output: string;
  bases: Base[];
}

export type Assessment = { module: string; version: ModuleVersion | undefined } & (
  | { status: 'current' }
  /** stale and waiting on nothing: buildable now */
  | { status: 'stale'; reasons: string[]; plan: BuildPlan }
  | { status: 'building'; reasons: string[]; buildId: string; commit: string }
  | { status: 'failed'; reasons: string[]; buildId: string; failure: string }
  /** stands on a base that is not settled; `on` names each, `roots` the failures or blocks behind them */
  | { status: 'waiting'; reasons: string[]; on: string[]; roots: string[] }
  /** stale, but cannot be built as things are, and says why */
  | { status: 'blocked'; reasons: string[]; why: string }
  /** not built by the mesh: no `build` section */
  | { status: 'not-built' }
);

export const DIGEST_BASE = /^sha256:[0-9a-f]{64}$/;

/** The key that makes two builds the same work: commit and the bases handed. */
export const attemptKey = (commit: string, bases: readonly Base[]): string => canonicalJson({ commit, bases: [...bases].sort((a, b) => (a.name < b.name ? -1 : 1)) });

const lastBuildOf = (builds: BuildsState, module: string): BuildRecord | undefined => {
  let last: BuildRecord | undefined;
  for (const build of builds.builds.values()) if (build.module === module && (!last || build.submittedSeq > last.submittedSeq)) last = build;
  return last;
};

export const assessGraph = (input: GraphInput): Map<string, Assessment> => {
  const results = new Map<string, Assessment>();
  const visiting = new Set<string>();

  const assess = (name: string): Assessment | undefined => {
    const known = results.get(name);
    if (known) return known;
    const module = input.modules.get(name);
    if (!module) return undefined;
    if (visiting.has(name)) return { module: name, version: input.builds.latest.get(name), status: 'blocked', reasons: [], why: `its bases lead back to ${name}: a cycle` };
    visiting.add(name);
    const result = assessOne(module);
    visiting.delete(name);
    results.set(name, result);
    return result;
  };

  const assessOne = (module: GraphModule): Assessment => {
    const name = module.name;
    const version = input.builds.latest.get(name);
    const build = module.manifest.build;
    if (!build) return { module: name, version, status: 'not-built' };

    // Bases: a module's newest artifact, or an artifact named by its digest.
    const bases: Base[] = [];
    const on: string[] = [];
    const roots = new Set<string>();
    for (const base of build.on) {
      if (DIGEST_BASE.test(base)) {
        bases.push({ name: base, digest: base });
        continue;
      }
      const baseAssessment = assess(base);
      if (!baseAssessment) {
        on.push(base);
        roots.add(`${base} is not registered`);
        continue;
      }
      if (baseAssessment.status === 'not-built') {
        on.push(base);
        roots.add(`${base} has no build section, so nothing the mesh builds can stand on it`);
        continue;
      }
      if (baseAssessment.status !== 'current') {
        on.push(base);
        if (baseAssessment.status === 'waiting') for (const root of baseAssessment.roots) roots.add(root);
        else if (baseAssessment.status === 'failed') roots.add(`${base} failed: ${baseAssessment.failure}`);
        else if (baseAssessment.status === 'blocked') roots.add(`${base} is blocked: ${baseAssessment.why}`);
        else if (baseAssessment.status === 'building') roots.add(`${base} is building (${baseAssessment.buildId})`);
        else roots.add(`${base} is stale`);
        continue;
      }
      if (baseAssessment.version) bases.push({ name: base, digest: baseAssessment.version.digest });
    }

    const source = module.manifest.source;
    const ref: SourceRef | undefined = source ? ('seat' in source ? { seat: source.seat, repository: source.repository } : { url: source.url }) : undefined;
    const head = source && ref ? input.builds.heads.get(sourceKey(ref, source.ref)) : undefined;

    const reasons: string[] = [];
    if (!version) reasons.push('never built');
    else {
      if (head && head.commit !== version.commit) reasons.push(`its source moved to ${head.commit.slice(0, 12)} (built from ${version.commit.slice(0, 12)})`);
      const builtOn = new Map(version.bases.map((b) => [b.name, b.digest]));
      for (const base of bases) {
        const was = builtOn.get(base.name);
        if (was !== base.digest) reasons.push(`base ${base.name} is now ${base.digest.slice(0, 19)} (built on ${was ? was.slice(0, 19) : 'nothing'})`);
      }
    }

    const pending = lastBuildOf(input.builds, name);
    if (pending?.status === 'submitted') return { module: name, version, status: 'building', reasons, buildId: pending.buildId, commit: pending.commit };
    if (on.length > 0) return { module: name, version, status: 'waiting', reasons, on, roots: [...roots] };
    if (reasons.length === 0) return { module: name, version, status: 'current' };
    const unstartable = recipeProblem(build);
    if (unstartable) return { module: name, version, status: 'blocked', reasons, why: unstartable };

    const commit = head?.commit;
    if (!source || !ref) return { module: name, version, status: 'blocked', reasons, why: 'it has no source to build from' };
    if (!commit) return { module: name, version, status: 'blocked', reasons, why: `no commit of ${sourceKey(ref, source.ref)} is known yet: the mesh-git holder's pushed/pull.merged, or \`mesh module moved ${name} COMMIT\`, says one` };
    if ('seat' in source && !input.seatHeld(source.seat)) {
      return { module: name, version, status: 'blocked', reasons, why: `${source.seat} is unheld: the clone address is composed from where its holder runs, and nothing holds it` };
    }
    if (pending?.status === 'failed' && attemptKey(pending.commit, pending.bases) === attemptKey(commit, bases)) {
      return { module: name, version, status: 'failed', reasons, buildId: pending.buildId, failure: pending.reason };
    }
    return { module: name, version, status: 'stale', reasons, plan: { commit, source: ref, path: source.path, recipe: build.recipe, output: build.output, bases } };
  };

  for (const name of [...input.modules.keys()].sort()) assess(name);
  return results;
};

/** The modules whose newest version stands, directly or not, on `module`'s artifact: what a change to it reaches. */
export const reachedBy = (input: GraphInput, module: string): string[] => {
  const producers = new Map<string, string[]>();
  for (const version of input.builds.versions.values()) producers.set(version.digest, [...(producers.get(version.digest) ?? []), version.module]);
  const dependents = new Map<string, Set<string>>();
  for (const [name, graphModule] of input.modules) {
    const latest = input.builds.latest.get(name);
    const on = new Set<string>([...(latest?.bases ?? []).flatMap((b) => producers.get(b.digest) ?? []), ...(graphModule.manifest.build?.on ?? []).filter((b) => !DIGEST_BASE.test(b))]);
    for (const base of on) dependents.set(base, (dependents.get(base) ?? new Set()).add(name));
  }
  const reached = new Set<string>();
  const queue = [module];
  while (queue.length > 0) {
    for (const next of dependents.get(queue.shift() as string) ?? []) {
      if (next !== module && !reached.has(next)) {
        reached.add(next);
        queue.push(next);
      }
    }
  }
  return [...reached].sort();
};
