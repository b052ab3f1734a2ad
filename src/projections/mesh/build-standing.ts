import { sourceKey } from '../../domain/builds/events.js';
import type { BuildStanding } from '../../domain/builds/standing.js';
import type { Manifest } from '../../domain/catalogue/manifest.js';
import type { ReadViews } from './read-views.js';

// The standing of every module the mesh builds (src/domain/builds/standing.ts), read from the
// `modules` and `builds` projections: its branch's head, the commit of its newest version, its
// newest build and what an operator kept its version against. One query per table, whatever the history.

export const readBuildStandings = async ({ db, view }: ReadViews): Promise<BuildStanding[]> => {
  const [modules, heads, versions, builds, kept] = await Promise.all([
    db.query<{ module: string; source: NonNullable<Manifest['source']> }>(`SELECT name AS module, manifest->'source' AS source FROM ${view('modules')} WHERE manifest ? 'build' AND manifest ? 'source'`),
    db.query<{ source_key: string; commit: string }>(`SELECT source_key, "commit" FROM ${view('source_heads')}`),
    db.query<{ module: string; commit: string }>(`SELECT DISTINCT ON (module) module, "commit" FROM ${view('module_versions')} ORDER BY module, built_seq DESC`),
    db.query<{ module: string; build_id: string; status: 'submitted' | 'succeeded' | 'failed'; commit: string; failure: string | null }>(
      `SELECT DISTINCT ON (module) module, build_id, status, "commit", failure FROM ${view('builds')} ORDER BY module, submitted_seq DESC`,
    ),
    db.query<{ module: string; head: string | null; failed_build: string | null }>(`SELECT module, head, failed_build FROM ${view('kept_versions')}`),
  ]);
  const headOf = new Map(heads.rows.map((r) => [r.source_key, r.commit]));
  const builtOf = new Map(versions.rows.map((r) => [r.module, r.commit]));
  const newestOf = new Map(builds.rows.map((r) => [r.module, r]));
  const keptOf = new Map(kept.rows.map((r) => [r.module, { head: r.head, failedBuild: r.failed_build }]));
  return modules.rows.map(({ module, source }) => {
    const head = headOf.get(sourceKey(source, source.ref));
    const built = builtOf.get(module);
    const newest = newestOf.get(module);
    const keptAgainst = keptOf.get(module);
    return {
      module,
      ...(head ? { head } : {}),
      ...(built ? { built } : {}),
      ...(newest ? { newest: { buildId: newest.build_id, status: newest.status, commit: newest.commit, ...(newest.failure !== null ? { failure: newest.failure } : {}) } } : {}),
      ...(keptAgainst ? { kept: keptAgainst } : {}),
    };
  });
};
