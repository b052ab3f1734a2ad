import type pg from 'pg';
import type { Manifest } from '../../domain/catalogue/manifest.js';
import type { Base, RolloutPolicy, SourceRef } from '../../domain/builds/events.js';
import type { GraphInput } from '../../domain/builds/graph.js';
import { emptyBuildsState, versionKey, type BuildRecord } from '../../domain/builds/state.js';
import { ident } from '../sql.js';

// The module graph as the projections (modules, builds, seats) hold it, in the shape the
// coordinator's rules judge (src/domain/builds/graph.ts): `mesh graph` reads it.

type Row = Record<string, unknown>;

export interface GraphEdge {
  source: string;
  target: string;
  targetDigest: string | null;
  /** the modules whose registered versions produced the target artifact; none while its producer is unregistered */
  producers: string[];
}

export interface ProjectedGraph {
  input: GraphInput;
  edges: GraphEdge[];
}

export const readGraph = async (pool: pg.Pool, readSchema: string): Promise<ProjectedGraph> => {
  const table = (name: string): string => `${ident(readSchema)}.${ident(name)}`;
  const q = async (sql: string): Promise<Row[]> => (await pool.query<Row>(sql)).rows;
  const [modules, builds, versions, heads, rollouts, edges, held] = await Promise.all([
    q(`SELECT name, definition_version, manifest FROM ${table('modules')}`),
    q(`SELECT * FROM ${table('builds')}`),
    q(`SELECT * FROM ${table('module_versions')} ORDER BY built_seq`),
    q(`SELECT * FROM ${table('source_heads')}`),
    q(`SELECT * FROM ${table('module_rollouts')}`),
    q(`SELECT e.source, e.target, e.target_digest, coalesce(array_agg(DISTINCT v.module) FILTER (WHERE v.module IS NOT NULL), '{}') AS producers
         FROM ${table('graph_edges')} e LEFT JOIN ${table('module_versions')} v ON v.artifact_digest = e.target_digest
        GROUP BY e.source, e.target, e.target_digest ORDER BY e.source, e.target`),
    q(`SELECT s.name, coalesce(array_agg(a.alias) FILTER (WHERE a.alias IS NOT NULL), '{}') AS aliases
         FROM ${table('seats')} s JOIN ${table('holdings')} h ON h.seat_id = s.id AND h.scope_key = 'mesh'
         LEFT JOIN ${table('seat_aliases')} a ON a.seat_id = s.id GROUP BY s.name`),
  ]);
  const state = emptyBuildsState();
  for (const h of heads) state.heads.set(String(h.source_key), { commit: String(h.commit), seq: Number(h.moved_seq) });
  for (const b of builds) {
    const common = {
      buildId: String(b.build_id),
      module: String(b.module),
      definitionVersion: Number(b.definition_version),
      commit: String(b.commit),
      source: b.source as SourceRef,
      path: String(b.path),
      recipe: String(b.recipe),
      output: String(b.output),
      bases: b.bases as Base[],
      registerOnly: Boolean(b.register_only),
      reason: String(b.reason),
      submittedSeq: Number(b.submitted_seq),
    };
    const record: BuildRecord =
      b.status === 'succeeded'
        ? { ...common, status: 'succeeded', digest: String(b.artifact_digest), finishedSeq: Number(b.finished_seq) }
        : b.status === 'failed'
          ? { ...common, status: 'failed', reason: String(b.failure), output: String(b.failure_output ?? ''), finishedSeq: Number(b.finished_seq) }
          : { ...common, status: 'submitted' };
    state.builds.set(record.buildId, record);
  }
  for (const v of versions) {
    const version = { module: String(v.module), digest: String(v.artifact_digest), commit: String(v.commit), bases: v.bases as Base[], buildId: String(v.build_id), seq: Number(v.built_seq) };
    state.versions.set(versionKey(version.module, version.digest), version);
    state.latest.set(version.module, version);
  }
  for (const r of rollouts) {
    if (r.policy) state.policies.set(String(r.module), r.policy as RolloutPolicy);
    if (r.deployed_digest) state.deployed.set(String(r.module), String(r.deployed_digest));
  }
  const heldNames = new Set(held.flatMap((h) => [String(h.name), ...(h.aliases as string[])]));
  const input: GraphInput = {
    modules: new Map(modules.map((m) => [String(m.name), { name: String(m.name), definitionVersion: Number(m.definition_version), manifest: m.manifest as Manifest }])),
    builds: state,
    seatHeld: (seat) => heldNames.has(seat),
  };
  return { input, edges: edges.map((e) => ({ source: String(e.source), target: String(e.target), targetDigest: (e.target_digest as string | null) ?? null, producers: e.producers as string[] })) };
};
