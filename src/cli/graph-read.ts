import { assessGraph, reachedBy, type Assessment } from '../domain/builds/graph.js';
import { NotFoundError } from '../errors.js';
import type { GraphEdge, ProjectedGraph } from '../projections/mesh/graph.js';
import { table, type Output } from './output.js';
import { asOfData, asOfLine, type AsOf } from './at.js';

// The module graph, judged by the same rules the coordinator uses (src/domain/builds/graph.ts):
// what this mesh holds, one module in full, what a change to a module reaches, and what must be
// rebuilt and why. The graph is read from the projections by src/projections/mesh/graph.ts.

export type GraphQuestion = { kind: 'all' } | { kind: 'stale' } | { kind: 'module'; module: string } | { kind: 'reaches'; module: string };

const short = (digest: string | undefined): string => (digest ? digest.slice(0, 19) : '-');

/** A module's standing in the graph, in a few words: current, buildable and why, building, failed, waiting, blocked. */
export const describeAssessment = (a: Assessment): string => {
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

/** An edge a module is built on: the artifact and which modules produced it. */
export const describeEdge = (edge: GraphEdge): string =>
  `${edge.target}${edge.targetDigest ? ` ${short(edge.targetDigest)}` : ''} → ${edge.producers.length > 0 ? edge.producers.join(', ') : 'no registered version produced it (yet)'}`;

/** Answers one question; a module that does not exist is refused. */
export const describeGraph = (graph: ProjectedGraph, question: GraphQuestion, out: Output, asOf?: AsOf): number => {
  const assessments = assessGraph(graph.input);
  // An answer about the past says which sequence it is for: first as text, as a field of the document with --json.
  if (asOf && !out.json) out.line(asOfLine(asOf));
  const data = (value: object | object[]): void => out.data(asOf ? (Array.isArray(value) ? { ...asOfData(asOf), modules: value } : { ...asOfData(asOf), ...value }) : value);
  const known = (module: string): void => {
    if (!graph.input.modules.has(module)) throw new NotFoundError(`no module ${module} is registered`, { field: 'module', module });
  };
  switch (question.kind) {
    case 'all':
    case 'stale': {
      const rows = [...assessments.values()].filter((a) => (question.kind === 'all' ? true : a.status !== 'current' && a.status !== 'not-built'));
      if (out.json) data(rows.map((a) => ({ ...a, deployed: graph.input.builds.deployed.get(a.module) ?? null, builtOn: graph.edges.filter((e) => e.source === a.module) })));
      else {
        if (rows.length === 0) out.line(question.kind === 'stale' ? 'nothing must be rebuilt' : 'no module is registered');
        // VERSION is the newest version the mesh built of it; a module it has not built has none.
        else table(out, ['MODULE', 'VERSION', 'STATE'], rows.map((a) => [a.module, a.version ? short(a.version.digest) : '(none built)', describeAssessment(a)]));
      }
      return 0;
    }
    case 'module': {
      known(question.module);
      const { assessment: a, versions, builds, builtOn, standingOn, policy, deployed } = moduleInGraph(graph, question.module, assessments);
      if (out.json) data({ ...a, policy, deployed, versions, builds, builtOn, standingOn });
      else {
        out.line(`${question.module}: ${describeAssessment(a)}`);
        out.line(`  rollout: ${policy}; nodes declared to run ${deployed ?? 'no artifact of it'}`);
        for (const v of versions) out.line(`  version ${v.digest} from ${v.commit.slice(0, 12)} (build ${v.buildId})`);
        for (const e of builtOn) out.line(`  built on ${describeEdge(e)}`);
        for (const e of standingOn) out.line(`  ${e.source} stands on it`);
        for (const b of builds.slice(0, 10)) out.line(`  build ${b.buildId} ${b.status} at ${b.commit.slice(0, 12)}${b.status === 'failed' ? `: ${b.reason}` : ''}`);
      }
      return 0;
    }
    case 'reaches': {
      known(question.module);
      const reached = reachedBy(graph.input, question.module);
      if (out.json) data({ module: question.module, reaches: reached });
      else out.line(reached.length > 0 ? `a change to ${question.module} reaches ${reached.join(', ')}` : `a change to ${question.module} reaches nothing else`);
      return 0;
    }
  }
};

/** One module in the graph: its standing, versions and builds (newest first), the edges it is built on and those that stand on it. */
export const moduleInGraph = (graph: ProjectedGraph, module: string, assessments = assessGraph(graph.input)) => ({
  assessment: assessments.get(module) as Assessment,
  versions: [...graph.input.builds.versions.values()].filter((v) => v.module === module).sort((x, y) => y.seq - x.seq),
  builds: [...graph.input.builds.builds.values()].filter((b) => b.module === module).sort((x, y) => y.submittedSeq - x.submittedSeq),
  builtOn: graph.edges.filter((e) => e.source === module),
  standingOn: graph.edges.filter((e) => e.producers.includes(module) || e.target === module),
  policy: graph.input.builds.policies.get(module) ?? 'roll-out',
  deployed: graph.input.builds.deployed.get(module) ?? null,
});
