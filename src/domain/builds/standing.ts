import type { Manifest } from '../catalogue/manifest.js';
import { sourceKey } from './events.js';
import type { BuildRecord, BuildsState } from './state.js';

// Whether a module the mesh builds is what its source says it should be. A newest build that
// failed, or a source that moved with no build of it succeeding since, means the nodes run an
// older version than the one asked for (or none): the overview names it as a problem, so
// `mesh status` exits non-zero, until a build succeeds or an operator keeps the version the nodes
// run (`mesh module keep`) — against that head and that failed build; a later move or failure is a
// problem again. A build under way is not a problem.

export interface BuildStanding {
  module: string;
  /** the commit the module's branch points at, when a trigger was heard */
  head?: string;
  /** the commit its newest version was built from */
  built?: string;
  newest?: { buildId: string; status: 'submitted' | 'succeeded' | 'failed'; commit: string; failure?: string };
  /** what an operator kept the running version against */
  kept?: { head: string | null; failedBuild: string | null };
}

const short = (commit: string): string => commit.slice(0, 12);

export const buildProblemsOf = (standings: readonly BuildStanding[]): string[] =>
  [...standings]
    .sort((a, b) => (a.module < b.module ? -1 : 1))
    .flatMap((s): string[] => {
      const runs = s.built ? `its newest version is from ${short(s.built)}` : 'it has no version yet';
      if (s.newest?.status === 'failed' && s.kept?.failedBuild !== s.newest.buildId) {
        return [`${s.module}: its newest build ${s.newest.buildId} (commit ${short(s.newest.commit)}) failed: ${s.newest.failure ?? 'no reason given'}; ${runs} — mend it and build again (mesh build ${s.module}), or keep what runs: mesh module keep ${s.module} --reason TEXT`];
      }
      if (s.head === undefined || s.head === s.built || s.head === s.kept?.head) return [];
      if (s.newest?.status === 'submitted') return [];
      return [`${s.module}: its source moved to ${short(s.head)} and no build of it has succeeded since (${runs}); mesh graph ${s.module} says why, mesh build ${s.module} builds it, mesh module keep ${s.module} --reason TEXT keeps what runs`];
    });

/** The standing of every module with a build section, from the fold of the log. */
export const buildStandingsOf = (modules: Iterable<{ name: string; manifest: Manifest }>, builds: BuildsState): BuildStanding[] => {
  const newest = new Map<string, BuildRecord>();
  for (const build of builds.builds.values()) {
    const known = newest.get(build.module);
    if (!known || build.submittedSeq > known.submittedSeq) newest.set(build.module, build);
  }
  return [...modules].flatMap((module): BuildStanding[] => {
    const source = module.manifest.source;
    if (!module.manifest.build || !source) return [];
    const head = builds.heads.get(sourceKey(source, source.ref))?.commit;
    const built = builds.latest.get(module.name)?.commit;
    const last = newest.get(module.name);
    const kept = builds.kept.get(module.name);
    return [
      {
        module: module.name,
        ...(head ? { head } : {}),
        ...(built ? { built } : {}),
        ...(last ? { newest: { buildId: last.buildId, status: last.status, commit: last.commit, ...(last.status === 'failed' ? { failure: last.reason } : {}) } } : {}),
        ...(kept ? { kept: { head: kept.head, failedBuild: kept.failedBuild } } : {}),
      },
    ];
  });
};
