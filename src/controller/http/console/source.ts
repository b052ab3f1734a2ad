import type pg from 'pg';
import type { EventLog } from '../../../adapters/eventlog/event-log.js';
import type { PassedCommit } from '../../../adapters/eventlog/chain-reader.js';
import { eventsOf, voidsIn, type LogSource } from '../../../cli/log-read.js';
import { logAskOf, type LogFilters } from '../../../cli/log-filters.js';
import { moduleInGraph } from '../../../cli/graph-read.js';
import { readHistory } from '../../../cli/history.js';
import { manifestSchema, type Manifest } from '../../../domain/catalogue/manifest.js';
import type { Declaration } from '../../../domain/declarations/declaration.js';
import type { StoredEvent } from '../../../domain/events/envelope.js';
import type { MeshEvent, StoredMeshEvent } from '../../../domain/registry.js';
import { newestMatchingRows } from '../../../projections/audit.js';
import { assignmentsOf, nodesAssigned } from '../../../projections/mesh/assignments.js';
import { lastFactsOf } from '../../../projections/mesh/facts.js';
import { readGraph } from '../../../projections/mesh/graph.js';
import { readNodeHolds } from '../../../projections/mesh/holds.js';
import { readCatalogue, readModule } from '../../../projections/mesh/modules.js';
import { readNode, readNodesWithModules } from '../../../projections/mesh/nodes.js';
import { notKnownFromProjections, OVERVIEW_PROJECTIONS, readOverviewMesh } from '../../../projections/mesh/overview.js';
import type { ReadViews } from '../../../projections/mesh/read-views.js';
import { findSeat, holdingsOf, readHoldings, readSeatSet } from '../../../projections/mesh/seats.js';
import type { BuildState } from '../../../projections/status.js';
import { ident } from '../../../projections/sql.js';
import type { DeclarationPublisher } from '../../declaration-publisher.js';
import type { HeldReader, Overview } from '../../overview.js';
import { overviewOfMesh, type OverviewSourceOptions } from '../overview-source.js';

// What the console shows, read as the CLI reads it: the projections' query functions against the
// read schema's views, the overview judged by the same function as `mesh status` from the mesh as
// the projections hold it, a node's declaration from NODES, and events (history, the log) from the
// log itself, found as `mesh history` and `mesh log` find them. The pages only render.

export interface ConsoleSourceOptions extends Omit<OverviewSourceOptions, 'mesh' | 'holds' | 'projections'> {
  pool: pg.Pool;
  readSchema: string;
  publisher: DeclarationPublisher;
  /** every projection build, as `mesh projections status` reads them */
  projections: () => Promise<BuildState[]>;
  /** this process's readers of the log that are held at a commit */
  holds?: () => HeldReader[];
  /** a reader of the log (history and the log page's events) */
  log: EventLog<MeshEvent>;
  logSource: LogSource;
  /** the most recent facts stated, newest last */
  recentFacts: () => StoredMeshEvent[];
}

export interface HomeView {
  overview: Overview & { unknown: string[] };
  projections: BuildState[];
  nodes: { name: string; enrolled: boolean; cordoned: boolean; modules: string[] }[];
  /** what the console cannot say, as `mesh status` lists it */
  notKnown: string[];
  facts: StoredMeshEvent[];
}

export interface NodeView {
  name: string;
  root: string;
  address: string | null;
  enrolled: boolean;
  enrolledAt: string | null;
  cordoned: boolean;
  removed: { seq: number; time: string | null } | null;
  assignments: { module: string; definition_version: number }[];
  seats: { seat: string; module: string }[];
  held: Awaited<ReturnType<typeof readNodeHolds>>;
  machine: Overview['nodes'][number] | undefined;
  declaration: Declaration | null;
  facts: Awaited<ReturnType<typeof lastFactsOf>>;
  history: History;
}

export interface History {
  events: StoredMeshEvent[];
  passed: PassedCommit[];
}

export interface ModuleView {
  name: string;
  definitionVersion: number;
  digest: string;
  manifest: unknown;
  /** the newest definition read against the manifest schema; a problem when it does not read */
  definition: { ok: true; manifest: Manifest } | { ok: false; problem: string };
  runsOn: string[];
  graph: ReturnType<typeof moduleInGraph>;
  history: History;
}

export interface SeatView {
  id: string;
  name: string;
  aliases: string[];
  scope: 'mesh' | 'node';
  delivers: string | null;
  declaredBy: string;
  holders: { scopeKey: string; node: string; module: string }[];
  history: History;
}

export interface LogView {
  head: number;
  events: StoredEvent[];
  passed: PassedCommit[];
  /** the page shows at most this many of the newest matches */
  limit: number;
}

/** The newest events the log page shows for one query; narrower filters or `since` reach further back. */
export const LOG_PAGE_EVENTS = 200;

/** How many aggregates' histories the console keeps between refreshes. */
const HISTORIES_KEPT = 64;
/** How many events the log page keeps between refreshes. */
const EVENTS_KEPT = 2_000;

export interface ConsoleSource {
  home: () => Promise<HomeView>;
  node: (name: string) => Promise<NodeView | undefined>;
  module: (name: string) => Promise<ModuleView | undefined>;
  seat: (name: string) => Promise<SeatView | undefined>;
  catalogue: () => Promise<Awaited<ReturnType<typeof readCatalogue>>>;
  projections: () => Promise<BuildState[]>;
  log: (filters: LogFilters) => Promise<LogView>;
}

export const consoleSource = (options: ConsoleSourceOptions): ConsoleSource => {
  const views: ReadViews = { db: options.pool, view: (table) => `${ident(options.readSchema)}.${ident(table)}` };
  const seatIdOf = async (name: string): Promise<string | undefined> => (await findSeat(views, name))?.id;
  // A page refreshed every 2 s reads only what happened since it last asked: each aggregate's
  // history is kept (the newest few asked for) up to the log's head as it was before that read.
  const histories = new Map<string, History & { upTo: number }>();
  /** events the log page has shown, by position: fetched from the log once */
  const shown = new Map<string, StoredEvent>();
  const history = async (aggregate: string): Promise<History> => {
    const known = histories.get(aggregate);
    const head = await options.log.headSeq();
    if (known && known.upTo >= head) return known;
    const passed: PassedCommit[] = [...(known?.passed ?? [])];
    const fresh = await readHistory(options.log, aggregate, { onPassed: (commit) => void (passed.some((p) => p.seq === commit.seq) || passed.push(commit)), seatIdOf, fromSeq: (known?.upTo ?? 0) + 1 });
    const seen = new Set((known?.events ?? []).map((e) => `${e.seq}.${e.index}`));
    const events = [...(known?.events ?? []), ...fresh.filter((e) => !seen.has(`${e.seq}.${e.index}`))];
    const kept = { events, passed: passed.sort((a, b) => a.seq - b.seq), upTo: head };
    histories.delete(aggregate);
    histories.set(aggregate, kept);
    if (histories.size > HISTORIES_KEPT) histories.delete(histories.keys().next().value as string);
    return kept;
  };

  // The overview as `mesh status` judges it: from the projections, when those it reads serve.
  const judged = async (): Promise<{ overview: Overview & { unknown: string[] }; projections: BuildState[]; serving: (name: string) => boolean }> => {
    const projections = await options.projections();
    const serving = (name: string): boolean => projections.some((p) => p.projection === name && p.status === 'serving');
    const holds = options.holds?.() ?? [];
    const health = projections.map((state) => ({
      projection: state.projection,
      lagEvents: state.lagCommits,
      stalledAt: state.stall ? { seq: state.stall.seq, eventType: state.stall.type, sqlstate: state.stall.sqlstate ?? null, error: state.stall.error } : undefined,
      notServing: state.status !== 'serving',
    }));
    if (OVERVIEW_PROJECTIONS.some((name) => !serving(name))) {
      const problems = projections.flatMap((p) => (p.problem ? [p.problem] : []));
      return { overview: { healthy: false, problems, notKnown: [], held: holds, nodes: [], seats: [], unknown: [], projections: health }, projections, serving };
    }
    const overview = await overviewOfMesh({ ...options, mesh: await readOverviewMesh(views, options.prefix), holds, projections: async () => health });
    return { overview, projections, serving };
  };

  return {
    home: async () => {
      const { overview, projections, serving } = await judged();
      const nodes = serving('nodes') ? await readNodesWithModules(views, { assignments: serving('assignments') }) : [];
      return { overview, projections, nodes, notKnown: [...overview.unknown, ...notKnownFromProjections(serving, nodes), ...overview.notKnown], facts: options.recentFacts() };
    },

    node: async (name) => {
      const node = await readNode(views, name);
      if (!node) return undefined;
      const [assignments, seats, held, facts, declaration, { overview }, past] = await Promise.all([
        assignmentsOf(views, name),
        holdingsOf(views, name),
        readNodeHolds(views, name),
        lastFactsOf(views, name, 10),
        options.publisher.lastDeclaration(name),
        judged(),
        history(`node.${name}`),
      ]);
      return {
        name: node.name,
        root: node.root,
        address: node.address,
        enrolled: node.public_key !== null,
        enrolledAt: node.enrolled_at ? new Date(node.enrolled_at).toISOString() : null,
        cordoned: node.cordoned,
        removed: node.removed_seq !== null ? { seq: Number(node.removed_seq), time: node.removed_at ? new Date(node.removed_at).toISOString() : null } : null,
        assignments,
        seats,
        held,
        machine: overview.nodes.find((m) => m.node === name),
        declaration,
        facts,
        history: past,
      };
    },

    module: async (name) => {
      const module = await readModule(views, name);
      if (!module) return undefined;
      const [runsOn, graph, past] = await Promise.all([nodesAssigned(views, name), readGraph(options.pool, options.readSchema), history(`module.${name}`)]);
      const parsed = manifestSchema.safeParse(module.manifest);
      const definition = parsed.success ? { ok: true as const, manifest: parsed.data } : { ok: false as const, problem: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') };
      return { ...module, definition, runsOn, graph: moduleInGraph(graph, name), history: past };
    },

    seat: async (name) => {
      const id = await seatIdOf(name);
      const seat = (await readSeatSet(views)).find((s) => s.id === id);
      if (!seat) return undefined;
      const holders = (await readHoldings(views)).filter((h) => h.seat_id === seat.id).map((h) => ({ scopeKey: h.scope_key, node: h.node, module: h.module }));
      return {
        id: seat.id,
        name: seat.name,
        aliases: seat.aliases,
        scope: seat.scope,
        delivers: seat.delivers,
        declaredBy: seat.definer === 'system' ? 'the mesh' : (seat.definer_module ?? ''),
        holders,
        history: await history(`seat.${seat.name}`),
      };
    },

    catalogue: () => readCatalogue(views),

    projections: options.projections,

    log: async (filters) => {
      const ask = logAskOf(filters, options.logSource.subjectPrefix);
      const projections = await options.projections();
      const audit = projections.find((p) => p.projection === 'audit' && p.status === 'serving');
      // The index answers up to where it has folded; the page says how far that is.
      const head = audit?.checkpoint ?? 0;
      const query = { ...ask, toSeq: head };
      const rows = await newestMatchingRows(views.db, views.view('audit'), query, LOG_PAGE_EVENTS);
      // A commit never changes: only events not shown before are fetched from the log.
      const key = (row: { seq: number; index: number }): string => `${row.seq}.${row.index}`;
      const missing = rows.filter((row) => !shown.has(key(row)));
      for (const event of await eventsOf(options.logSource, missing, ask.aggregate)) shown.set(key(event), event);
      const events = rows.map((row) => shown.get(key(row))).filter((event): event is StoredEvent => event !== undefined);
      for (const k of [...shown.keys()].slice(0, Math.max(0, shown.size - EVENTS_KEPT))) shown.delete(k);
      const from = rows[0]?.seq ?? ask.fromSeq;
      const passed = await voidsIn(options.logSource, { ...query, fromSeq: rows.length === LOG_PAGE_EVENTS ? from : ask.fromSeq });
      return { head, events, passed, limit: LOG_PAGE_EVENTS };
    },
  };
};
