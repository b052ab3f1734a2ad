import { createHash } from 'node:crypto';
import { AckPolicy, DeliverPolicy, JetStreamApiError, jetstream, jetstreamManager, type ConsumerMessages, type JetStreamClient, type JsMsg } from '@nats-io/jetstream';
import type { NatsConnection, Subscription } from '@nats-io/nats-core';
import type pg from 'pg';
import type { Logger } from 'pino';
import type { EventLog } from '../adapters/eventlog/event-log.js';
import type { MeshEvent, StoredMeshEvent } from '../domain/registry.js';
import type { MeshService } from './mesh-service.js';
import { declarationSchema, declarationSubject, type Declaration } from '../domain/declarations/declaration.js';
import { deriveCapabilities, deriveFacts } from '../domain/facts/derive.js';
import { deriveRotationSteps } from '../domain/secrets/rotation.js';
import { nodeNamed } from '../domain/nodes/state.js';
import { FactCapabilities, factAggregate, factEvents, factSubject } from '../domain/facts/events.js';
import type { MeshState } from '../domain/mesh/state.js';
import { heartbeatSchema, reportSchema, type Report } from '../domain/reports/report.js';
import { issuesLine, oversized } from '../domain/reports/bounds.js';
import { ConcurrencyError } from '../errors.js';
import { ensureNodeStatus, recordBudgetNotes, recordHeartbeats, recordReport } from './node-status.js';
import type { ReportMetrics } from './metrics.js';
import { nodeOfControlSubject, refuseImpersonation, type ImpersonationMetrics } from './speaker.js';
import { DEFAULT_FACT_INTERVAL_MS, FactBudget } from './fact-budget.js';
import { judgeReportSignature, signedByItsNode } from './signed-report.js';
import { ReportQueue, type Judged } from './report-queue.js';

// Reads what nodes say (CONTROL, a work queue only the controller reads) and turns it into facts.
// A report is acknowledged only once everything it caused is done: its node's status recorded in
// PostgreSQL and its facts in the log. While either is away the report is handed back (nak with a
// delay) and comes again; nothing is dropped or acknowledged falsely. A report about anything but
// the declaration outstanding for its node is acknowledged and not acted on (design 25 §3).
// PostgreSQL may be away when the ingester starts (a controller coming back before it): its node
// status table is made once it is back, and reports wait in CONTROL until then.
// What a node says is bounded before it is read (domain/reports/bounds.ts), only its newest report
// is judged (report-queue.ts), and the facts it causes are stated at most once per interval per
// kind (fact-budget.ts); a node that says more is named in the node status table.

export interface ReportIngesterOptions {
  names: { nodesStream: string; controlStream: string; prefix: string };
  pool: pg.Pool;
  statusSchema: string;
  actor: string;
  logger: Logger;
  /** the mesh as the controller has folded it: what has been stated already */
  state: () => MeshState;
  /** where the controller's fold is held, if it is: facts are not derived from a fold that stops short of the log */
  held?: () => { seq: number; problem: string } | undefined;
  /** resolves once the controller's fold has taken `seq`: facts just appended are folded before the next report is judged */
  reached: (seq: number) => Promise<void>;
  /** a durable consumer name, shared by every controller process */
  consumer?: string;
  /**
   * the process's mesh service, whose one writer states the facts in order with operators'
   * commands (mesh-writer.ts), decided against its view; without it they are appended on their own
   */
  mesh?: Pick<MeshService, 'appendDecided'>;
  /** told what became of each report, and which facts it caused; and of each one refused for naming another node */
  metrics?: ReportMetrics & Partial<ImpersonationMetrics>;
  /** at most one fact of a kind about a node per this long (MESH_FACT_INTERVAL_MS; fact-budget.ts) */
  factIntervalMs?: number;
}

const RETRY_MS = 1_000;

export class ReportIngester {
  private readonly js: JetStreamClient;
  private messages: ConsumerMessages | undefined;
  private heartbeats: Subscription | undefined;
  private flushTimer: NodeJS.Timeout | undefined;
  private readonly beats = new Map<string, Date>();
  private running: Promise<void> | undefined;
  private readonly declarations = new Map<string, Declaration>();
  /** node → the capabilities being stated for it now */
  private readonly capabilitiesInFlight = new Map<string, string>();
  /** the node status table made (migrated) in PostgreSQL; undefined until it has been, or after it failed */
  private statusTable: Promise<void> | undefined;
  /** how often each node's facts may be stated, and who said more */
  private readonly budget: FactBudget;
  /** the newest report of each node, judged one node after another */
  private readonly queue: ReportQueue;

  constructor(
    private readonly nc: NatsConnection,
    private readonly log: EventLog<MeshEvent>,
    private readonly options: ReportIngesterOptions,
  ) {
    this.js = jetstream(nc);
    this.budget = new FactBudget({ intervalMs: options.factIntervalMs ?? DEFAULT_FACT_INTERVAL_MS });
    this.queue = new ReportQueue((message) => this.handle(message), () => this.options.metrics?.reportRead('replaced'));
  }

  async start(): Promise<void> {
    await this.ensureStatusTable().catch((error: unknown) => this.options.logger.warn({ err: error }, 'node status table not made yet (PostgreSQL unavailable); reports wait in CONTROL until it is'));
    const jsm = await jetstreamManager(this.nc);
    const name = this.options.consumer ?? 'controller-reports';
    try {
      await jsm.consumers.info(this.options.names.controlStream, name);
    } catch (error) {
      if (!(error instanceof JetStreamApiError) || error.code !== 10014) throw error;
      await jsm.consumers.add(this.options.names.controlStream, {
        durable_name: name,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        filter_subject: `${this.options.names.prefix}.control.*.report`,
        ack_wait: 30_000_000_000,
        max_deliver: -1,
      });
    }
    const consumer = await this.js.consumers.get(this.options.names.controlStream, name);
    this.messages = await consumer.consume({ max_messages: 64 });
    this.running = (async () => {
      for await (const message of this.messages ?? []) {
        const node = this.reporterOf(message.subject);
        // Its node's signature is checked before it is queued, so a forged report never displaces
        // the node's own (report-queue.ts keeps one per node): signed-report.ts.
        const signature = judgeReportSignature(this.options, node, message, this.options.state());
        if (signature === 'later') {
          message.nak(RETRY_MS);
          continue;
        }
        if (signature === 'refused') {
          this.options.metrics?.reportRead('impersonating');
          message.term();
          continue;
        }
        this.queue.offer(node, message);
      }
    })();

    // Heartbeats are core NATS: nothing persisted, only the newest time per node kept.
    this.heartbeats = this.nc.subscribe(`${this.options.names.prefix}.control.*.alive`, {
      callback: (error, message) => {
        if (error) return;
        // The subject is the speaker: only host <node> may publish on it (speaker.ts).
        const node = nodeOfControlSubject(message.subject, this.options.names.prefix, 'alive');
        if (!node) return;
        // ...and the server can be made to publish there too: only its node's signature counts (signed-report.ts).
        if (!signedByItsNode(this.options, 'heartbeat', node, message, this.options.state())) return;
        this.beats.set(node, new Date());
        // Alive whatever it says; what it says is read only within bounds.
        const tooLarge = oversized('heartbeat', message.data.length);
        if (tooLarge) return this.budget.refused(node, tooLarge);
        const beat = heartbeatSchema.safeParse(safeJson(message.data));
        if (!beat.success) return this.budget.refused(node, `a heartbeat out of bounds: ${issuesLine(beat.error)}`);
        if (beat.data.node !== node) {
          refuseImpersonation(this.options, { entry: 'heartbeat', identity: `host ${node}`, claimed: `node ${beat.data.node}`, field: 'node' });
          return;
        }
        if (beat.data.capabilities) this.noteCapabilities(node, beat.data.capabilities);
      },
    });
    this.flushTimer = setInterval(() => void this.flushHeartbeats(), 1_000);
    this.flushTimer.unref();
  }

  async stop(): Promise<void> {
    if (this.flushTimer) clearInterval(this.flushTimer);
    this.heartbeats?.unsubscribe();
    await this.messages?.close();
    await this.running?.catch(() => undefined);
    await this.queue.stop();
    this.budget.stop();
    await this.flushHeartbeats();
  }

  /** Made once; tried again by the next report or heartbeat flush after a failure. */
  private ensureStatusTable(): Promise<void> {
    const making = (this.statusTable ??= ensureNodeStatus(this.options.pool, this.options.statusSchema));
    making.catch(() => {
      if (this.statusTable === making) this.statusTable = undefined;
    });
    return making;
  }

  private async flushHeartbeats(): Promise<void> {
    const notes = this.budget.takeNotes();
    if (this.beats.size === 0 && notes.length === 0) return;
    const beats = new Map(this.beats);
    try {
      await this.ensureStatusTable();
      await recordHeartbeats(this.options.pool, this.options.statusSchema, beats);
      for (const [node, at] of beats) if (this.beats.get(node) === at) this.beats.delete(node);
      await recordBudgetNotes(this.options.pool, this.options.statusSchema, notes);
      for (const note of notes) this.options.logger.warn({ node: note.node, since: note.since }, `node over its budget: ${note.line}`);
    } catch (error) {
      this.budget.untaken(notes);
      this.options.logger.warn({ err: error }, 'heartbeats not recorded yet; PostgreSQL unavailable');
    }
  }

  /** The node a report came from: its subject says, as the bus lets only that node publish there (speaker.ts). */
  private reporterOf(subject: string): string {
    return nodeOfControlSubject(subject, this.options.names.prefix, 'report') ?? subject;
  }

  private async handle(message: JsMsg): Promise<Judged> {
    let report: Report;
    try {
      const tooLarge = oversized('report', message.data.length);
      if (tooLarge) throw new Error(tooLarge);
      const read = reportSchema.safeParse(message.json());
      if (!read.success) throw new Error(`a report out of bounds: ${issuesLine(read.error)}`);
      report = read.data;
    } catch (error) {
      // Nothing can ever make it valid: say so, name its node, and let it go, rather than redeliver it for ever.
      this.options.logger.error({ err: error, subject: message.subject }, 'unreadable report');
      this.options.metrics?.reportRead('unreadable');
      this.budget.refused(this.reporterOf(message.subject), (error as Error).message);
      message.term();
      return { kind: 'done' };
    }
    // The subject is the speaker: only host <node> may publish on it (speaker.ts). A report naming
    // any other node is refused for good, and nothing it says is recorded or stated.
    const speaker = nodeOfControlSubject(message.subject, this.options.names.prefix, 'report');
    if (speaker !== report.node) {
      refuseImpersonation(this.options, { entry: 'report', identity: speaker ? `host ${speaker}` : `the publisher of ${message.subject}`, claimed: `node ${report.node}`, field: 'node' });
      this.options.metrics?.reportRead('impersonating');
      message.term();
      return { kind: 'done' };
    }
    try {
      const declaration = await this.outstanding(report.node);
      if (!declaration || declaration.digest !== report.digest) {
        this.options.logger.info({ node: report.node, digest: report.digest, outstanding: declaration?.digest }, 'report about a declaration that is not outstanding: not acted on');
        this.options.metrics?.reportRead('not-outstanding');
        message.ack();
        return { kind: 'done' };
      }
      await this.ensureStatusTable();
      await recordReport(this.options.pool, this.options.statusSchema, report, new Date(report.at));
      const waitUntil = await this.stateFacts(declaration, report);
      await this.stateRotationSteps(declaration, report);
      // Facts that wait for their interval: the report stays in CONTROL until they are stated.
      if (waitUntil !== undefined) {
        this.options.metrics?.reportRead('waiting');
        return { kind: 'wait', until: waitUntil };
      }
      this.options.metrics?.reportRead('acted');
      message.ack();
    } catch (error) {
      this.options.logger.warn({ err: error, node: report.node, sequence: report.sequence }, 'report held for a retry');
      this.options.metrics?.reportRead('retried');
      message.nak(RETRY_MS);
    }
    return { kind: 'done' };
  }

  /**
   * States the facts of the report whose kind's budget allows (fact-budget.ts); returns when the
   * others may be stated, if any wait.
   */
  private async stateFacts(declaration: Declaration, report: Report): Promise<number | undefined> {
    const node = report.node;
    const derived = deriveFacts(this.options.state(), declaration, report);
    const now = new Set<string>();
    let waitUntil: number | undefined;
    for (const kind of REPORT_FACT_KINDS) {
      const facts = derived.filter((e) => e.type === kind);
      const admission = this.budget.admit(node, kind, declaration.digest, facts.length === 0 ? undefined : JSON.stringify(facts));
      if (admission === 'now') now.add(kind);
      else if (admission === 'later') waitUntil = Math.min(waitUntil ?? Infinity, this.budget.dueAt(node, kind));
    }
    if (now.size === 0) return waitUntil;
    // The kinds are in the id: what waited is stated later under an id of its own.
    const kinds = [...now].sort().join(',');
    const commandId = `report:${node}:${report.sequence}:${createHash('sha256').update(JSON.stringify(report)).digest('hex').slice(0, 16)}${now.size === REPORT_FACT_KINDS.length ? '' : `:${kinds}`}`;
    try {
      await this.appendFacts(node, `the facts of report ${report.sequence} from ${node}`, (state) => deriveFacts(state, declaration, report).filter((e) => now.has(e.type)), {
        commandId,
        causationId: `report:${node}:${report.sequence}`,
      });
    } catch (error) {
      for (const kind of now) this.budget.refund(node, kind);
      throw error;
    }
    return waitUntil;
  }

  /**
   * What the report shows of rotations it takes part in (an applier holding both versions, a
   * reader running with the new one), stated on each secret's aggregate after the report's facts,
   * each judged again against the newest state so it is stated once (docs/decisions.md, "Rotating a
   * secret").
   */
  private async stateRotationSteps(declaration: Declaration, report: Report): Promise<void> {
    for (const found of deriveRotationSteps(this.options.state(), declaration, report)) {
      const decide = (state: MeshState) => deriveRotationSteps(state, declaration, report).find((d) => d.aggregate === found.aggregate) ?? { ...found, events: [] };
      const metadata = { commandId: `rotation:${found.aggregate}:${report.node}:${declaration.sequence}`, causationId: `report:${report.node}:${report.sequence}`, actor: this.options.actor };
      if (this.options.mesh) {
        await this.options.mesh.appendDecided({ subject: found.summary, decide, metadata });
        continue;
      }
      const state = this.options.state();
      const events = decide(state).events;
      if (events.length === 0) continue;
      const result = await this.log.append(found.aggregate, events, state.versions.get(found.aggregate) ?? 0, metadata);
      await this.options.reached(result.seq);
    }
  }

  /**
   * A heartbeat naming capabilities other than those stated: stated once (one in flight per node and
   * set), at most once per interval, the newest kept meanwhile (fact-budget.ts).
   */
  private noteCapabilities(node: string, capabilities: readonly string[]): void {
    const state = this.options.state();
    if (!nodeNamed(state.nodes, node)) return;
    const said = JSON.stringify([...new Set(capabilities)].sort());
    if (this.capabilitiesInFlight.get(node) === said) return;
    const changed = deriveCapabilities(state, node, capabilities).length > 0;
    const admission = this.budget.admit(node, FactCapabilities.type, null, changed ? said : undefined, () => this.noteCapabilities(node, capabilities));
    if (admission !== 'now') return;
    this.capabilitiesInFlight.set(node, said);
    const commandId = `capabilities:${node}:${createHash('sha256').update(said).digest('hex').slice(0, 16)}:${state.seq}`;
    this.appendFacts(node, `the capabilities ${node} reported`, (now) => deriveCapabilities(now, node, capabilities), { commandId, causationId: `heartbeat:${node}` })
      .catch((error: unknown) => {
        this.budget.refund(node, FactCapabilities.type);
        this.options.logger.warn({ err: error, node }, 'capabilities not stated yet; the next heartbeat tries again');
      })
      .finally(() => this.capabilitiesInFlight.delete(node));
  }

  private async appendFacts(node: string, subject: string, derive: (state: MeshState) => MeshEvent[], ids: { commandId: string; causationId: string }): Promise<void> {
    const held = this.options.held?.();
    // The report waits in CONTROL (handed back) until the fold reads past the commit holding it.
    if (held) throw new Error(`the controller's fold is held at log seq ${held.seq} (${held.problem}); the report waits until an operator voids it`);
    const aggregate = factAggregate(node);
    const metadata = { ...ids, actor: this.options.actor };
    let result: { seq: number; events: StoredMeshEvent[] };
    if (this.options.mesh) {
      result = await this.options.mesh.appendDecided({ subject, decide: (state) => ({ aggregate, events: derive(state), summary: `facts of ${node}` }), metadata });
      if (result.events.length === 0) return;
    } else {
      const state = this.options.state();
      const facts = derive(state);
      if (facts.length === 0) return;
      try {
        result = await this.log.append(aggregate, facts, state.versions.get(aggregate) ?? 0, metadata);
      } catch (error) {
        if (error instanceof ConcurrencyError) throw new Error(`the controller's view of ${aggregate} is behind the log; retrying`, { cause: error });
        throw error;
      }
    }
    // The next report is judged on a view that holds these facts, so none is stated twice (the
    // writer's view holds them as it issues them; an append on its own waits for the follower).
    if (!this.options.mesh) await this.options.reached(result.seq);
    for (const event of result.events) {
      await this.js.publish(factSubject(event.type, this.options.names.prefix), JSON.stringify(event), { msgID: event.id });
    }
    this.options.metrics?.factsStated(result.events.map((e) => e.type));
    this.options.logger.info({ node, facts: result.events.map((e) => e.type), seq: result.seq }, 'facts stated');
  }

  private async outstanding(node: string): Promise<Declaration | undefined> {
    const jsm = await jetstreamManager(this.nc);
    const message = await jsm.streams.getMessage(this.options.names.nodesStream, { last_by_subj: declarationSubject(node, this.options.names.prefix) });
    if (!message) return undefined;
    const cached = this.declarations.get(node);
    if (cached && cached.digest === message.json<{ digest: string }>().digest) return cached;
    const declaration = declarationSchema.parse(message.json());
    this.declarations.set(node, declaration);
    return declaration;
  }
}

/** The kinds of fact a report may cause, each with a budget of its own (fact-budget.ts). */
const REPORT_FACT_KINDS: readonly string[] = factEvents.map((e) => e.type).filter((type) => type !== FactCapabilities.type);


const safeJson = (data: Uint8Array): unknown => {
  try {
    return JSON.parse(new TextDecoder().decode(data)) as unknown;
  } catch {
    return undefined;
  }
};
