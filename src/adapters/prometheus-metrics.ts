import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { CommandMetrics, CommandOutcome, ReportMetrics, ReportOutcome } from '../controller/metrics.js';
import type { ImpersonationMetrics, SpeakerEntry } from '../controller/speaker.js';

// The control plane's metrics in Prometheus's text format (prom-client), one registry per
// process, never the library's global one, so several controllers (or tests) in one process each
// count their own. Counters and histograms move as things happen; the gauges of state (the log's
// head, the projections, the nodes) are read when scraped. docs/decisions.md, "Metrics and probes".

/** One declaration pass, as the controller states it (controller.ts `DeclarationPass`). */
export interface PassSeen {
  millis: number;
  deriveMillis: number;
  composed: number;
  published: readonly string[];
  refused: readonly string[];
}

/** What a scrape reads. A source that fails leaves its series out and `mesh_metrics_source_up` at 0. */
export interface ScrapeSources {
  /** the log's last sequence */
  logHead: () => Promise<number>;
  /** the last sequence this process's view has folded */
  viewSeq: () => number;
  projections: () => Promise<readonly { projection: string; version?: number | undefined; status: string; checkpoint: number; lagCommits: number; stall: unknown }[]>;
  /** each node's state (overview.ts `nodeStateOf`) */
  nodeStates: () => Promise<readonly string[]>;
}

const COMMAND_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const PASS_SECONDS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
/** Every state a node can be counted in, so a state with no node reads 0 rather than vanishing. */
const NODE_STATES = ['healthy', 'unhealthy', 'never-heard-from', 'unknown'];
/** Identities counted by name before the rest are counted together: a series per identity the bus knows, never unbounded. */
const IMPERSONATION_IDENTITIES_MAX = 256;

export class PrometheusMetrics implements CommandMetrics, ReportMetrics, ImpersonationMetrics {
  readonly registry = new Registry();
  readonly contentType = this.registry.contentType;
  private readonly r = [this.registry];
  private readonly commitsAppended = new Counter({ name: 'mesh_log_commits_appended_total', help: "Commits this process's log writer stored", registers: this.r });
  private readonly logHead = new Gauge({ name: 'mesh_log_head_sequence', help: "The log's last sequence, read when scraped", registers: this.r });
  private readonly viewSeq = new Gauge({ name: 'mesh_view_sequence', help: "The last log sequence this controller's view has folded", registers: this.r });
  private readonly checkpoint = new Gauge({ name: 'mesh_projection_checkpoint_sequence', help: "Each projection build's checkpoint: the last log sequence it applied", labelNames: ['projection', 'version', 'status'], registers: this.r });
  private readonly lag = new Gauge({ name: 'mesh_projection_lag_commits', help: "Commits in the log after each projection build's checkpoint", labelNames: ['projection', 'version', 'status'], registers: this.r });
  private readonly stalled = new Gauge({ name: 'mesh_projection_stalled', help: '1 while a projection build is stalled at a commit it cannot apply', labelNames: ['projection', 'version', 'status'], registers: this.r });
  private readonly passes = new Counter({ name: 'mesh_declaration_passes_total', help: 'Declaration passes over the nodes a change reached', registers: this.r });
  private readonly passSeconds = new Histogram({ name: 'mesh_declaration_pass_duration_seconds', help: 'A declaration pass: composing, and publishing what changed', buckets: PASS_SECONDS, registers: this.r });
  private readonly deriveSeconds = new Histogram({ name: 'mesh_declaration_derive_duration_seconds', help: "A declaration pass's composing alone", buckets: PASS_SECONDS, registers: this.r });
  private readonly declarations = new Counter({ name: 'mesh_declarations_total', help: 'Declarations by what a pass did with them: composed, published (its digest changed), refused', labelNames: ['result'], registers: this.r });
  private readonly commands = new Counter({ name: 'mesh_commands_total', help: "Operators' commands by verb and outcome (ok, refused, conflict, error)", labelNames: ['verb', 'outcome'], registers: this.r });
  private readonly commandSeconds = new Histogram({ name: 'mesh_command_duration_seconds', help: "An operator's command from arrival to answer, by verb and outcome", labelNames: ['verb', 'outcome'], buckets: COMMAND_SECONDS, registers: this.r });
  private readonly reports = new Counter({ name: 'mesh_reports_total', help: 'Reports read from CONTROL by what became of them: acted, not-outstanding, unreadable, retried, replaced (by a newer one from the node), waiting (its facts for their interval)', labelNames: ['outcome'], registers: this.r });
  private readonly facts = new Counter({ name: 'mesh_facts_stated_total', help: 'Facts stated into the log from reports, by type', labelNames: ['type'], registers: this.r });
  private readonly impersonations = new Counter({ name: 'mesh_impersonation_refused_total', help: 'Messages refused because their body named another identity than the one that sent them, by entry point and the identity that sent them', labelNames: ['entry', 'identity'], registers: this.r });
  private readonly impersonators = new Set<string>();
  private readonly nodes = new Gauge({ name: 'mesh_nodes', help: 'Nodes by state, as the overview judges them: healthy, unhealthy, never-heard-from, unknown', labelNames: ['state'], registers: this.r });
  private readonly sourceUp = new Gauge({ name: 'mesh_metrics_source_up', help: 'Whether a scrape could read a source of its gauges (log, projections, nodes)', labelNames: ['source'], registers: this.r });

  /** `processMetrics`: also the process's own (CPU, memory, event loop, handles), as prom-client collects them */
  constructor(options: { processMetrics?: boolean } = {}) {
    if (options.processMetrics) collectDefaultMetrics({ register: this.registry });
  }

  commitAppended(): void {
    this.commitsAppended.inc();
  }

  declarationPass(pass: PassSeen): void {
    this.passes.inc();
    this.passSeconds.observe(pass.millis / 1000);
    this.deriveSeconds.observe(pass.deriveMillis / 1000);
    this.declarations.inc({ result: 'composed' }, pass.composed);
    this.declarations.inc({ result: 'published' }, pass.published.length);
    this.declarations.inc({ result: 'refused' }, pass.refused.length);
  }

  commandDecided(verb: string, outcome: CommandOutcome, seconds: number): void {
    this.commands.inc({ verb, outcome });
    this.commandSeconds.observe({ verb, outcome }, seconds);
  }

  reportRead(outcome: ReportOutcome): void {
    this.reports.inc({ outcome });
  }

  factsStated(types: readonly string[]): void {
    for (const type of types) this.facts.inc({ type });
  }

  impersonationRefused(entry: SpeakerEntry, identity: string): void {
    if (this.impersonators.size < IMPERSONATION_IDENTITIES_MAX) this.impersonators.add(identity);
    this.impersonations.inc({ entry, identity: this.impersonators.has(identity) ? identity : 'other' });
  }

  /** What `/metrics` serves: this registry's text, its gauges of state read from `sources` at each scrape. */
  endpoint(sources: ScrapeSources): { contentType: string; text: () => Promise<string> } {
    return { contentType: this.contentType, text: () => this.exposition(sources) };
  }

  /** The text a scrape answers: the gauges of state read from `sources` first, each source on its own. */
  async exposition(sources: ScrapeSources): Promise<string> {
    this.viewSeq.set(sources.viewSeq());
    await Promise.all([
      this.read('log', async () => this.logHead.set(await sources.logHead())),
      this.read('projections', async () => {
        for (const gauge of [this.checkpoint, this.lag, this.stalled]) gauge.reset();
        const builds = await sources.projections();
        for (const build of builds) {
          const labels = { projection: build.projection, version: build.version === undefined ? '' : String(build.version), status: build.status };
          this.checkpoint.set(labels, build.checkpoint);
          this.lag.set(labels, build.lagCommits);
          this.stalled.set(labels, build.stall ? 1 : 0);
        }
      }),
      this.read('nodes', async () => {
        this.nodes.reset();
        const states = await sources.nodeStates();
        for (const state of new Set([...NODE_STATES, ...states])) this.nodes.set({ state }, states.filter((s) => s === state).length);
      }),
    ]);
    return this.registry.metrics();
  }

  private async read(source: string, take: () => Promise<void>): Promise<void> {
    try {
      await take();
      this.sourceUp.set({ source }, 1);
    } catch {
      this.sourceUp.set({ source }, 0);
    }
  }
}
