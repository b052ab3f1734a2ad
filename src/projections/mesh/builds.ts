import type { Base } from '../../domain/builds/events.js';
import { sourceKey } from '../../domain/builds/events.js';
import { BUILD_EVENT_TYPES } from '../../domain/builds/state.js';
import { foldingProjection } from './folding.js';
import type { ReadViews } from './read-views.js';
import { RowImage, replaceRows } from './rows.js';

// `source_heads`, `builds`, `module_versions`, `module_rollouts`, `graph_edges` and (v2)
// `kept_versions`, as evolveBuilds folds the build events: an outcome only applies to a build still
// submitted; a success is a module version (the newest for its module, so its bases are the
// module's edges) and, when it rolls out, what the module's nodes run; a kept version is what an
// operator kept against; a version an operator deployed is what the module's nodes run.

type Row = Record<string, unknown>;

interface Batch {
  heads: RowImage<Row>;
  builds: RowImage<Row>;
  versions: RowImage<Row>;
  rollouts: RowImage<Row>;
  kept: RowImage<Row>;
  /** the newest version's bases of each module whose version changed */
  edges: Map<string, Base[]>;
}

export const buildsProjection = foldingProjection<Batch>({
  name: 'builds',
  version: 2,
  types: BUILD_EVENT_TYPES,
  open: async (events, tx) => {
    const batch: Batch = {
      heads: new RowImage('source_heads', ['source_key']),
      builds: new RowImage('builds', ['build_id']),
      versions: new RowImage('module_versions', ['module', 'artifact_digest']),
      rollouts: new RowImage('module_rollouts', ['module']),
      kept: new RowImage('kept_versions', ['module']),
      edges: new Map(),
    };
    await batch.builds.load(tx, events.flatMap((e) => (e.type === 'build.succeeded' || e.type === 'build.failed' ? [{ build_id: e.data.buildId }] : [])));
    await batch.rollouts.load(tx, events.flatMap((e) => (e.type === 'build.succeeded' || e.type === 'module.rollout-set' || e.type === 'module.version-deployed' ? [{ module: e.data.module }] : [])));
    return batch;
  },
  apply: (batch, event) => {
    switch (event.type) {
      case 'source.moved': {
        const data = event.data;
        batch.heads.set({ source_key: sourceKey(data.source, data.ref), commit: data.commit, moved_seq: event.seq });
        break;
      }
      case 'build.submitted': {
        const d = event.data;
        batch.builds.set({
          build_id: d.buildId,
          module: d.module,
          definition_version: d.definitionVersion,
          commit: d.commit,
          source: d.source,
          path: d.path,
          recipe: d.recipe,
          output: d.output,
          bases: d.bases,
          register_only: d.registerOnly,
          reason: d.reason,
          status: 'submitted',
          artifact_digest: null,
          failure: null,
          failure_output: null,
          started_at: event.time,
          submitted_seq: event.seq,
          finished_at: null,
          finished_seq: null,
        });
        break;
      }
      case 'build.succeeded': {
        const d = event.data;
        const build = batch.builds.get({ build_id: d.buildId });
        if (!build || build.status !== 'submitted') break;
        batch.builds.set({ ...build, status: 'succeeded', artifact_digest: d.digest, finished_at: event.time, finished_seq: event.seq });
        batch.versions.set({ module: d.module, artifact_digest: d.digest, commit: d.commit, bases: d.bases, build_id: d.buildId, built_at: event.time, built_seq: event.seq });
        batch.edges.set(d.module, d.bases);
        if (d.rollOut) {
          const rollout = batch.rollouts.get({ module: d.module });
          batch.rollouts.set({ module: d.module, policy: rollout?.policy ?? null, deployed_digest: d.digest });
        }
        break;
      }
      case 'build.failed': {
        const d = event.data;
        const build = batch.builds.get({ build_id: d.buildId });
        if (!build || build.status !== 'submitted') break;
        batch.builds.set({ ...build, status: 'failed', failure: d.reason, failure_output: d.output, finished_at: event.time, finished_seq: event.seq });
        break;
      }
      case 'module.rollout-set': {
        const d = event.data;
        const rollout = batch.rollouts.get({ module: d.module });
        batch.rollouts.set({ module: d.module, policy: d.policy, deployed_digest: rollout?.deployed_digest ?? null });
        break;
      }
      case 'module.version-kept': {
        const d = event.data;
        batch.kept.set({ module: d.module, head: d.head, failed_build: d.failedBuild, reason: d.reason, kept_seq: event.seq });
        break;
      }
      case 'module.version-deployed': {
        const d = event.data;
        const rollout = batch.rollouts.get({ module: d.module });
        batch.rollouts.set({ module: d.module, policy: rollout?.policy ?? null, deployed_digest: d.digest });
        break;
      }
      default:
        break;
    }
  },
  save: async (batch, tx) => {
    for (const image of [batch.heads, batch.builds, batch.versions, batch.rollouts, batch.kept]) await image.save(tx);
    const modules = [...batch.edges.keys()];
    await replaceRows(
      tx,
      'graph_edges',
      ['source', 'kind'],
      modules.map((source) => ({ source, kind: 'built-on' })),
      // One edge per base name: the last one stated wins, as a map of the bases would keep it.
      [...batch.edges.entries()].flatMap(([source, bases]) => [...new Map(bases.map((base) => [base.name, { source, target: base.name, kind: 'built-on', target_digest: base.digest }])).values()]),
    );
  },
});

/** Each followed branch's key and the log sequence its last trigger was heard at. */
export const readSourceHeads = async ({ db, view }: ReadViews): Promise<Map<string, number>> =>
  new Map((await db.query<{ source_key: string; moved_seq: string }>(`SELECT source_key, moved_seq FROM ${view('source_heads')}`)).rows.map((r) => [r.source_key, Number(r.moved_seq)]));

/** One module's roll-out: the policy an operator set (null: never set) and the artifact its nodes are declared to run. */
export const readRollout = async ({ db, view }: ReadViews, module: string): Promise<{ policy: string | null; deployedDigest: string | null }> => {
  const row = (await db.query<{ policy: string | null; deployed_digest: string | null }>(`SELECT policy, deployed_digest FROM ${view('module_rollouts')} WHERE module = $1`, [module])).rows[0];
  return { policy: row?.policy ?? null, deployedDigest: row?.deployed_digest ?? null };
};
