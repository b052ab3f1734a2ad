import type pg from 'pg';
import type { Manifest } from '../domain/catalogue/manifest.js';
import type { Base, RolloutPolicy, SourceRef } from '../domain/builds/events.js';
import { assessGraph, reachedBy, type Assessment, type GraphInput } from '../domain/builds/graph.js';
import { emptyBuildsState, versionKey, type BuildRecord } from '../domain/builds/state.js';
import { NotFoundError } from '../errors.js';
import { ident } from '../projections/sql.js';
import type { Output } from './output.js';

// The module graph as the projections hold it, judged by the same rules the coordinator uses
// (src/domain/builds/graph.ts): what this mesh holds, one module in full, what a change to a
// module reaches, and what must be rebuilt and why.

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

export type GraphQuestion = { kind: 'all' } | { kind: 'stale' } | { kind: 'module'; module: string } | { kind: 'reaches'; module: string };

const short = (digest: string | undefined): string => (digest ? digest.slice(0, 19) : '-');

const detail = (a: Assessment): string => {
  switch (a.status) {
    case 'stale':
      return `buildable: ${a.reasons.join('; ')}`;
    case 'building':
      return `building ${a.buildId} at ${a.commit.slice(0, 12)}`;
    case 'failed':
      return `failed (${a.buildId}): ${a.failure}`;
    case 'waiting':
      return `waiting on ${a.on.join(', ')}: ${a.roots.join('; ')}`;
    case 'blocked':
      return `blocked: ${a.why}`;
    case 'not-built':
      return 'not built by the mesh';
    default:
      return 'current';
  }
};

const edgeText = (edge: GraphEdge): string =>
  `${edge.target}${edge.targetDigest ? ` ${short(edge.targetDigest)}` : ''} → ${edge.producers.length > 0 ? edge.producers.join(', ') : 'no registered version produced it (yet)'}`;

/** Answers one question; a module that does not exist is refused. */
export const describeGraph = (graph: ProjectedGraph, question: GraphQuestion, out: Output): number => {
  const assessments = assessGraph(graph.input);
  const known = (module: string): void => {
    if (!graph.input.modules.has(module)) throw new NotFoundError(`no module ${module} is registered`, { field: 'module', module });
  };
  switch (question.kind) {
    case 'all':
    case 'stale': {
      const rows = [...assessments.values()].filter((a) => (question.kind === 'all' ? true : a.status !== 'current' && a.status !== 'not-built'));
      if (out.json) out.data(rows.map((a) => ({ ...a, deployed: graph.input.builds.deployed.get(a.module) ?? null, builtOn: graph.edges.filter((e) => e.source === a.module) })));
      else {
        for (const a of rows) out.line(`${a.module.padEnd(24)} ${short(a.version?.digest).padEnd(20)} ${detail(a)}`);
        if (rows.length === 0) out.line(question.kind === 'stale' ? 'nothing must be rebuilt' : 'no module is registered');
      }
      return 0;
    }
    case 'module': {
      known(question.module);
      const a = assessments.get(question.module) as Assessment;
      const versions = [...graph.input.builds.versions.values()].filter((v) => v.module === question.module).sort((x, y) => y.seq - x.seq);
      const builds = [...graph.input.builds.builds.values()].filter((b) => b.module === question.module).sort((x, y) => y.submittedSeq - x.submittedSeq);
      const builtOn = graph.edges.filter((e) => e.source === question.module);
      const standingOn = graph.edges.filter((e) => e.producers.includes(question.module) || e.target === question.module);
      const policy = graph.input.builds.policies.get(question.module) ?? 'roll-out';
      const deployed = graph.input.builds.deployed.get(question.module) ?? null;
      if (out.json) out.data({ ...a, policy, deployed, versions, builds, builtOn, standingOn });
      else {
        out.line(`${question.module}: ${detail(a)}`);
        out.line(`  rollout: ${policy}; nodes declared to run ${deployed ?? 'no artifact of it'}`);
        for (const v of versions) out.line(`  version ${v.digest} from ${v.commit.slice(0, 12)} (build ${v.buildId})`);
        for (const e of builtOn) out.line(`  built on ${edgeText(e)}`);
        for (const e of standingOn) out.line(`  ${e.source} stands on it`);
        for (const b of builds.slice(0, 10)) out.line(`  build ${b.buildId} ${b.status} at ${b.commit.slice(0, 12)}${b.status === 'failed' ? `: ${b.reason}` : ''}`);
      }
      return 0;
    }
    case 'reaches': {
      known(question.module);
      const reached = reachedBy(graph.input, question.module);
      if (out.json) out.data({ module: question.module, reaches: reached });
      else out.line(reached.length > 0 ? `a change to ${question.module} reaches ${reached.join(', ')}` : `a change to ${question.module} reaches nothing else`);
      return 0;
    }
  }
};
