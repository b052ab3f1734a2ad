import { sourceKey } from '../domain/builds/events.js';
import { buildProblemsOf, buildStandingsOf, type BuildStanding } from '../domain/builds/standing.js';
import { refusalOvercome } from '../domain/declarations/events.js';
import type { MeshState } from '../domain/mesh/state.js';
import type { Report } from '../domain/reports/report.js';
import { allAssignments } from '../domain/assignments/state.js';
import { registeredModules } from '../domain/catalogue/state.js';
import { statedRefusals } from '../domain/declarations/state.js';
import { allStatedHolds, type NodeHold } from '../domain/facts/state.js';
import { allNodes } from '../domain/nodes/state.js';
import { allHoldings, allSeats } from '../domain/seats/state.js';
import { sourceHeads } from '../domain/builds/state.js';
import { describeDangling, eventLinksOf, type DanglingConsume } from '../domain/bus/event-links.js';

// What the mesh is doing, said plainly, never claiming health from absence: a node not heard from
// is named with the time it was last heard (or that it never was), a declaration not applied is
// named with the one that was, and held, refused or crash-looping resources are counted with
// their reasons. Healthy only when every node was heard from, applied its newest declaration, and
// nothing is held, refused, crash-looping, uncomposable or stalled, and no consumed event
// goes unemitted.

export interface NodeHealthInput {
  node: string;
  report: Report | null;
  reportedAt: Date | null;
  heartbeatAt: Date | null;
  /** what it said beyond its budget (fact-budget.ts), named until `until` */
  overBudget?: { line: string; since: Date; until: Date } | null;
}

/** A reader of the log stopped at a commit that does not verify or read. */
export interface HeldReader {
  reader: string;
  seq: number;
  aggregate: string;
  problem: string;
  since: string;
}

export interface ProjectionHealthInput {
  projection: string;
  stalledAt?: { seq: number; eventType: string; sqlstate: string | null; error: string } | undefined;
  /** log entries not applied yet */
  lagEvents: number;
  /** no build of it serves reads yet */
  notServing?: boolean;
  /** it has applied nothing since then while the log held more (status.ts) */
  notMovingSince?: string | undefined;
  /** when a stalled projection tries again, and how often it has */
  stallRetry?: { attempts: number; nextAttemptAt: string | null } | undefined;
}

/** How far behind a projection may be before the overview says so: a burst being folded is not a fault. */
const LAG_TOLERATED = 50;

/** How long a node may be silent before the overview says so: MESH_HEARTBEAT_THRESHOLD_MS, else 15 s. */
export const heartbeatThresholdMs = (env: NodeJS.ProcessEnv = process.env): number => Number(env.MESH_HEARTBEAT_THRESHOLD_MS ?? 15_000);

/**
 * The mesh as the overview judges it: what nodes there are, what is assigned and held, which
 * sources are followed, and the last refusal stated for each node's declaration. The controller
 * takes it from its fold of the log; `mesh status` from the projections.
 */
export interface OverviewMesh {
  nodes: { name: string; address: string | null }[];
  assignments: { node: string; module: string }[];
  seats: { id: string; name: string; scope: string; delivers: string | null }[];
  holdings: { seatId: string; scopeKey: string; node: string; module: string }[];
  /** every module that follows a source, in the order the modules were first registered */
  sources: { module: string; key: string }[];
  /** a followed source's key → the log sequence its last trigger was heard at */
  heads: ReadonlyMap<string, number>;
  /** node → the last refusal stated for its declaration */
  refusals: ReadonlyMap<string, { seq: number; derivedFromSeq: number }>;
  /** each built module's branch head, newest version and newest build (src/domain/builds/standing.ts) */
  builds?: BuildStanding[];
  /** what each node was last stated to hold (fact.held), by node, module and resource */
  holds: NodeHold[];
  /** consumed events no registered module emits (src/domain/bus/event-links.ts) */
  dangling?: DanglingConsume[];
}

export const overviewMeshOf = (state: MeshState, prefix = 'mesh'): OverviewMesh => ({
  nodes: [...allNodes(state.nodes)].map((node) => ({ name: node.name, address: node.address })),
  assignments: [...allAssignments(state.assignments)].map((a) => ({ node: a.node, module: a.module })),
  seats: [...allSeats(state.seats)].map((seat) => ({ id: seat.id, name: seat.name, scope: seat.scope, delivers: seat.delivers })),
  holdings: [...allHoldings(state.seats)].map(({ seat, scopeKey, holder }) => ({ seatId: seat, scopeKey, node: holder.node, module: holder.module })),
  sources: [...registeredModules(state.catalogue)].flatMap((module) => {
    const source = module.manifest.source;
    return source ? [{ module: module.name, key: sourceKey(source, source.ref) }] : [];
  }),
  heads: new Map([...sourceHeads(state.builds)].map(([key, head]) => [key, head.seq])),
  refusals: new Map(statedRefusals(state.declarations)),
  builds: buildStandingsOf(registeredModules(state.catalogue), state.builds),
  holds: [...allStatedHolds(state.facts)]
    .map(({ node, module, resource, kind, reason, since }) => ({ node, module, resource, kind, reason, since }))
    .sort((a, b) => (a.node === b.node ? (a.module === b.module ? (a.resource < b.resource ? -1 : 1) : a.module < b.module ? -1 : 1) : a.node < b.node ? -1 : 1)),
  dangling: eventLinksOf(state, prefix).dangling,
});

export interface OverviewInput {
  state: MeshState;
  nodes: NodeHealthInput[];
  /**
   * Set when what nodes last said could not be read (the controller's store away), saying why:
   * nothing is then judged from its absence — no node is "never heard from" for want of a row.
   */
  nodesUnknown?: string | undefined;
  /** the newest declaration published for each node, and the log sequence it was derived at */
  declared: Map<string, { sequence: number; digest: string; derivedFromSeq: number }>;
  projections?: ProjectionHealthInput[];
  /** readers the log holds at a commit: nothing after it is known to them */
  holds?: HeldReader[];
  now: Date;
  heartbeatThresholdMs: number;
}

export interface NodeOverview {
  node: string;
  address: string | null;
  lastHeard: string | null;
  lastReport: string | null;
  declaredSequence: number | null;
  appliedSequence: number | null;
  running: { module: string; definitionVersion: number; artifact: string | null }[];
  assigned: string[];
  /** each held resource as `<resource>: <reason>` */
  holds: string[];
  /** the same holds in full, with where each was first stated */
  held: NodeHold[];
  seats: string[];
  problems: string[];
  /** why what this node last said is not known (its store away), or null when it is */
  statusUnknown: string | null;
  /** what it said beyond its budget, while it is named for it (fact-budget.ts), or null */
  overBudget: string | null;
}

export interface Overview {
  healthy: boolean;
  problems: string[];
  /** what the mesh cannot say, listed as such (not failures): e.g. a source no trigger was heard from */
  notKnown: string[];
  /** the projections' health when it was known */
  projections?: ProjectionHealthInput[];
  /** the commit the log holds readers at, and which readers */
  held: HeldReader[];
  nodes: NodeOverview[];
  seats: { seat: string; scope: string; delivers: string | null; holders: string[] }[];
  /** consumed events no registered module emits, each also one of `problems` */
  dangling?: DanglingConsume[];
}

/** A node's state in one word, as the overview judges it: what `mesh_nodes{state}` counts. */
export type NodeState = 'healthy' | 'unhealthy' | 'never-heard-from' | 'unknown';

export const nodeStateOf = (node: NodeOverview): NodeState => {
  if (node.statusUnknown !== null) return 'unknown';
  if (node.lastHeard === null) return 'never-heard-from';
  return node.problems.length === 0 ? 'healthy' : 'unhealthy';
};

const when = (date: Date | null): string | null => (date ? date.toISOString() : null);

/** The one line the overview says when what nodes last said cannot be read. */
export const nodesUnknownLine = (why: string): string => `what the nodes last said is not known, so none is judged heard from or not: ${why}`;

export const overview = ({ state, ...input }: OverviewInput): Overview => overviewOf({ ...input, mesh: overviewMeshOf(state) });

export const overviewOf = (input: Omit<OverviewInput, 'state'> & { mesh: OverviewMesh }): Overview => {
  const { mesh } = input;
  const problems: string[] = [];
  // First, because everything below is judged from a fold that stops there.
  const holds = input.holds ?? [];
  for (const seq of [...new Set(holds.map((h) => h.seq))].sort((a, b) => a - b)) {
    const at = holds.filter((h) => h.seq === seq);
    problems.push(
      `the log holds ${at.map((h) => h.reader).join(', ')} at seq ${seq} (${at[0]?.aggregate}): ${at[0]?.problem}; nothing after it is read until an operator voids it: mesh log void ${seq} --reason "…"`,
    );
  }
  if (input.nodesUnknown !== undefined) problems.push(nodesUnknownLine(input.nodesUnknown));
  const byNode = new Map(input.nodes.map((n) => [n.node, n]));
  const holderAt = (seatId: string, scopeKey: string) => mesh.holdings.find((h) => h.seatId === seatId && h.scopeKey === scopeKey);
  const nodes: NodeOverview[] = [];

  for (const node of [...mesh.nodes].sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const health = byNode.get(node.name);
    const declared = input.declared.get(node.name);
    const report = health?.report ?? null;
    const nodeProblems: string[] = [];
    const heard = [health?.heartbeatAt, health?.reportedAt].filter((d): d is Date => d instanceof Date).sort((a, b) => b.getTime() - a.getTime())[0] ?? null;
    // What a node said is unknown while its store is away: the outage is named once (by the
    // caller), not turned into "never heard from" about every node.
    const known = input.nodesUnknown === undefined;
    if (known && !heard) nodeProblems.push(`${node.name}: never heard from`);
    else if (known && heard && input.now.getTime() - heard.getTime() > input.heartbeatThresholdMs) nodeProblems.push(`${node.name}: not heard from since ${heard.toISOString()}`);
    if (known && declared && (!report || report.digest !== declared.digest)) {
      nodeProblems.push(`${node.name}: has not applied declaration ${declared.sequence}${report ? ` (last applied ${report.sequence} at ${report.at})` : ''}`);
    }
    if (report?.refusal) nodeProblems.push(`${node.name}: refused declaration ${report.sequence}: ${report.refusal}`);
    // A node saying more than its budget: what it said beyond it is not in the log, and it is named here.
    const overBudget = health?.overBudget && health.overBudget.until.getTime() > input.now.getTime() ? `over its budget since ${health.overBudget.since.toISOString()}: ${health.overBudget.line}` : null;
    if (overBudget) nodeProblems.push(`${node.name}: ${overBudget}`);

    const assigned = mesh.assignments.filter((a) => a.node === node.name).map((a) => a.module).sort();
    // What is held comes from the facts stated (fact.held), not from reading the report again:
    // the same holds every follower of the facts heard about, with where each was first stated.
    const nodeHolds = mesh.holds.filter((h) => h.node === node.name);
    const holds = nodeHolds.map((h) => `${h.resource}: ${h.reason ?? 'no reason given'}`);
    for (const module of assigned) {
      const outcomes = (report?.resources ?? []).filter((r) => r.module === module);
      const held = nodeHolds.filter((h) => h.module === module);
      const refused = outcomes.filter((r) => r.outcome === 'refused');
      const looping = outcomes.filter((r) => r.outcome === 'crash-looping');
      const running = report?.running.some((r) => r.module === module) ?? false;
      if (held.length > 0) {
        const total = outcomes.length;
        const applied = outcomes.filter((r) => r.outcome === 'applied').length;
        const since = held.reduce((first, h) => (h.since.seq < first.seq ? h.since : first), held[0]?.since ?? { seq: 0, time: '' });
        nodeProblems.push(
          `${node.name}/${module}: assigned, not taken — ${held.length} held since ${since.time} (log seq ${since.seq}), ${applied} of ${total} applied (${[...new Set(held.map((r) => r.reason ?? 'no reason given'))].join('; ')})`,
        );
      }
      for (const r of refused) nodeProblems.push(`${node.name}/${module}: ${r.key} refused: ${r.reason ?? 'no reason given'}`);
      for (const r of looping) nodeProblems.push(`${node.name}/${module}: ${r.key} crash-looping (${r.restarts ?? '?'} restarts): ${r.reason ?? ''}`.trim());
      if (known && report && report.digest === declared?.digest && !running && held.length + refused.length + looping.length === 0) nodeProblems.push(`${node.name}/${module}: assigned but not running`);
    }
    // A refusal stands until a declaration derived after the refused attempt has been published:
    // the log keeps the last refusal stated, and only the published declaration says it was overcome.
    const refusal = mesh.refusals.get(node.name);
    if (refusal && !refusalOvercome(refusal, declared)) nodeProblems.push(`${node.name}: its declaration cannot be composed (stated at log sequence ${refusal.seq}); the previous one stands`);

    const seats = mesh.seats.filter((seat) => holderAt(seat.id, seat.scope === 'mesh' ? 'mesh' : node.name)?.node === node.name).map((seat) => seat.name).sort();
    problems.push(...nodeProblems);
    nodes.push({
      node: node.name,
      address: node.address,
      lastHeard: when(heard),
      lastReport: when(health?.reportedAt ?? null),
      declaredSequence: declared?.sequence ?? null,
      appliedSequence: report && declared && report.digest === declared.digest ? report.sequence : (report?.sequence ?? null),
      running: report?.running ?? [],
      assigned,
      holds,
      held: nodeHolds,
      seats,
      problems: nodeProblems,
      statusUnknown: input.nodesUnknown ?? null,
      overBudget,
    });
  }

  for (const projection of input.projections ?? []) {
    if (projection.notServing) problems.push(`projection ${projection.projection}: not built yet, so what it shows is not known`);
    else if (!projection.stalledAt && projection.notMovingSince) problems.push(`projection ${projection.projection}: not moving: nothing applied since ${projection.notMovingSince}, ${projection.lagEvents} log entries behind`);
    else if (!projection.stalledAt && projection.lagEvents > LAG_TOLERATED) problems.push(`projection ${projection.projection}: ${projection.lagEvents} log entries behind`);
    if (projection.stalledAt) {
      const retry = projection.stallRetry ? ` (${projection.stallRetry.attempts} tries${projection.stallRetry.nextAttemptAt ? `, next at ${projection.stallRetry.nextAttemptAt}` : ''})` : '';
      problems.push(`projection ${projection.projection}: stalled at sequence ${projection.stalledAt.seq} (${projection.stalledAt.eventType}${projection.stalledAt.sqlstate ? `, SQLSTATE ${projection.stalledAt.sqlstate}` : ''})${retry}: ${projection.stalledAt.error}`);
    }
  }

  // Builds: a newest build that failed, a source moved with nothing built from it since.
  problems.push(...buildProblemsOf(mesh.builds ?? []));

  // Subscriptions that match nothing: every log stays quiet while nothing reacts (issue 127 of the seeds).
  problems.push(...(mesh.dangling ?? []).map(describeDangling));

  // Sources: a branch no push or merge was ever heard from may be moving unseen.
  const notKnown: string[] = [];
  const sources = new Map<string, string[]>();
  for (const { module, key } of mesh.sources) sources.set(key, [...(sources.get(key) ?? []), module]);
  for (const [key, modules] of [...sources].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const head = mesh.heads.get(key);
    notKnown.push(head !== undefined ? `${key}: last trigger heard at log sequence ${head} (${modules.join(', ')})` : `${key}: no trigger heard from it yet, so a change there is not known (${modules.join(', ')})`);
  }

  const seats = [...mesh.seats]
    .sort((a, b) => (a.name < b.name ? -1 : 1))
    .map((seat) => ({
      seat: seat.name,
      scope: seat.scope,
      delivers: seat.delivers,
      holders: mesh.holdings.filter((h) => h.seatId === seat.id).map((h) => `${h.node}/${h.module}`).sort(),
    }));
  return { healthy: problems.length === 0, problems, notKnown, held: holds, nodes, seats, dangling: mesh.dangling ?? [], ...(input.projections ? { projections: input.projections } : {}) };
};
