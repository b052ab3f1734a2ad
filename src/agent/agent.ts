import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { pino, type Logger } from 'pino';
import { askBusIdentity } from '../adapters/bus-identity-client.js';
import type { Identity } from '../adapters/identity.js';
import { declarationSignatureProblem } from '../adapters/declaration-signature.js';
import { hostKey, nodeIdentity, storedEnrolment } from '../adapters/enrolment-client.js';
import { fetchSecret } from '../adapters/vault-client.js';
import { connectNats } from '../adapters/nats/connect.js';
import type { ModuleBusIdentity } from '../domain/bus/module-identity.js';
import { hostInbox } from '../domain/bus/users.js';
import { CAPABILITY_KINDS } from '../domain/declarations/capabilities.js';
import { declarationSubject, type Declaration } from '../domain/declarations/declaration.js';
import { aliveSubject, reportSubject, type Report } from '../domain/reports/report.js';
import { UnavailableError } from '../errors.js';
import { judgeDeclaration } from './acceptance.js';
import { followDeclarations, type DeclarationMessage } from './declaration-feed.js';
import { DockerEngine } from './docker.js';
import { busIdentityDriver } from './drivers/bus-identity.js';
import { containerDriver } from './drivers/container.js';
import { directoryDriver } from './drivers/directory.js';
import type { DriverContext } from './drivers/driver.js';
import { fileDriver } from './drivers/file.js';
import { regionDriver } from './drivers/region.js';
import { serviceDriver } from './drivers/service.js';
import { trustAnchorDriver, trustStore, type TrustStore } from './drivers/trust-anchor.js';
import { commandServiceManager, serviceManagerCommand } from './service-manager.js';
import { processDriver, type ProcessDriver } from './drivers/process.js';
import { runOnceDriver, type RunOnceDriver } from './drivers/run-once.js';
import { secretDriver } from './drivers/secret.js';
import { pause } from './pause.js';
import { ReconcileLoop } from './reconcile-loop.js';
import { Reconciler } from './reconciler.js';
import { refusalReport, reportOf, sameReport } from './report-of.js';
import { ReportOutbox } from './report-outbox.js';
import { signedMessage } from './report-signature.js';
import { sha256 } from './resource-identity.js';
import { agentWire, backoff, DEFAULT_TIMINGS, type AgentTimings, type AgentWire } from './settings.js';
import { RecordStore, StateFolder } from './state-folder.js';

// The node agent: applies its node's declaration and reports. It works from its state folder
// first and the bus second — it reconciles the declaration it accepted last before it has even
// connected, and nothing it runs depends on NATS, PostgreSQL or the control plane being up.

const NO_CONTROLLER_KEY =
  "no controller key to check declarations against: this node enrolled before declarations were signed. Pass the controller's public key: `mesh agent --controller-key KEY|FILE` (KEY: the controller's ed25519 public key in base64, the publicKey of its key file and the key the log's first commit names; FILE: that key file)";

export interface EnrolRequest {
  node: string;
  token: string | undefined;
  stateDir: string;
  natsUrl: string;
}

export interface AgentOptions {
  node: string;
  natsUrl: string;
  stateDir: string;
  wire?: Partial<AgentWire>;
  timings?: Partial<AgentTimings>;
  logger?: Logger;
  /** passed to `enrol` as it is */
  token?: string;
  /**
   * the controller's ed25519 public key (base64): the agent applies only declarations signed with
   * it. Wins over the one its enrolment answer named; needed when the node enrolled before
   * declarations were signed, else it applies nothing from the bus.
   */
  controllerKey?: string;
  /** joins the mesh before the agent connects as the node (enrolment); nothing by default */
  enrol?: (request: EnrolRequest) => Promise<void>;
  /**
   * the kinds beyond every agent's that it says it applies, in its heartbeat: all it has drivers
   * for unless told fewer (an agent standing in for an older host says none)
   */
  capabilities?: readonly string[];
  /** the service manager's command, as its words (service-manager.ts): systemctl unless MESH_SERVICE_MANAGER says otherwise */
  serviceManager?: readonly string[];
  /** where the machine's trust anchors go and how its bundles are refreshed: MESH_TRUST_DIR and MESH_TRUST_REFRESH, else Debian's */
  trustStore?: TrustStore;
  /** every report, as it is handed to the outbox */
  onReport?: (report: Report) => void;
}

export interface AgentStatus {
  connected: boolean;
  /** reconcile passes completed since start */
  passes: number;
  /** the declaration accepted last */
  sequence: number | null;
  lastReport: Report | undefined;
}

export class Agent {
  private readonly node: string;
  private readonly wire: AgentWire;
  private readonly timings: AgentTimings;
  private readonly logger: Logger;
  private readonly folder: StateFolder;
  private readonly stopping = new AbortController();
  private readonly loop: ReconcileLoop;
  private readonly outbox: ReportOutbox;
  private records: RecordStore | undefined;
  private processes: ProcessDriver | undefined;
  private steps: RunOnceDriver | undefined;
  private reconciler: Reconciler | undefined;
  private declaration: Declaration | undefined;
  /** the declaration whose next report is published even if it says nothing new */
  private announce: Declaration | undefined;
  private lastReport: Report | undefined;
  private nc: NatsConnection | undefined;
  /** the host key, read from the state folder once: every report and heartbeat is signed with it */
  private signingKey: Identity | undefined;
  private connected = false;
  private passes = 0;
  private timers: NodeJS.Timeout[] = [];
  private following: Promise<void> | undefined;
  /** the key every declaration must be signed with: given, else kept from the enrolment */
  private controllerKey: string | undefined;

  constructor(private readonly options: AgentOptions) {
    this.node = options.node;
    this.wire = { ...agentWire(), ...options.wire };
    this.timings = { ...DEFAULT_TIMINGS, ...options.timings };
    // The process's logger names the component already (`mesh-agent`): a child naming it again
    // would write the key twice in every JSON line.
    this.logger = (options.logger ?? pino({ level: 'silent', base: { component: 'agent' } })).child({ node: options.node });
    this.folder = new StateFolder(options.stateDir);
    this.loop = new ReconcileLoop(() => this.reconcile(), this.logger);
    this.outbox = new ReportOutbox((report) => this.publishReport(report), this.timings, this.logger);
  }

  async start(): Promise<void> {
    this.folder.lock();
    try {
      await (this.options.enrol ?? (async () => undefined))({ node: this.node, token: this.options.token, stateDir: this.folder.dir, natsUrl: this.options.natsUrl });
      this.records = new RecordStore(this.folder);
      const docker = new DockerEngine(this.timings);
      const context: DriverContext = { folder: this.folder, records: this.records, timings: this.timings, logger: this.logger, wake: (reason) => this.wake(reason) };
      this.processes = processDriver(context);
      this.steps = runOnceDriver(context, docker);
      this.reconciler = new Reconciler(
        {
          directory: directoryDriver(context),
          file: fileDriver(context),
          region: regionDriver(context),
          'trust-anchor': trustAnchorDriver(context, this.options.trustStore ?? trustStore()),
          service: serviceDriver(context, commandServiceManager(this.options.serviceManager ?? serviceManagerCommand())),
          secret: secretDriver(context, (secret, version) => this.fetchSecret(secret, version)),
          'bus-identity': busIdentityDriver(context, (module) => this.askBusIdentity(module)),
          process: this.processes,
          'run-once': this.steps,
          container: containerDriver(context, docker),
        },
        this.records,
        this.logger,
      );
      // What this agent started before its restart keeps running and is watched, not started again.
      this.processes.adoptAll();
      this.controllerKey = this.options.controllerKey ?? storedEnrolment(this.folder.dir)?.controllerKey;
      if (!this.controllerKey) this.logger.error({ stateDir: this.folder.dir }, NO_CONTROLLER_KEY);
      this.declaration = this.folder.loadDeclaration();
      this.announce = this.declaration;
    } catch (error) {
      this.folder.unlock();
      throw error;
    }
    if (this.declaration) this.wake('start');
    const resync = setInterval(() => this.wake('resync'), this.timings.resyncMs);
    const heartbeat = setInterval(() => this.heartbeat(), this.timings.heartbeatMs);
    this.timers.push(resync, heartbeat);
    this.following = this.connectAndFollow();
  }

  /** Stops the agent and leaves everything it started running: an agent restart restarts nothing. */
  async stop(): Promise<void> {
    if (this.stopping.signal.aborted) return;
    this.stopping.abort();
    for (const timer of this.timers) clearInterval(timer);
    await this.loop.idle();
    this.processes?.detachAll();
    this.steps?.cancelAll();
    await this.outbox.stop();
    await this.following;
    await this.nc?.close().catch(() => undefined);
    this.folder.unlock();
  }

  status(): AgentStatus {
    return { connected: this.connected, passes: this.passes, sequence: this.declaration?.sequence ?? null, lastReport: this.lastReport };
  }

  private wake(reason: string): void {
    if (!this.stopping.signal.aborted) this.loop.wake(reason);
  }

  private async reconcile(): Promise<void> {
    const declaration = this.declaration;
    if (!declaration || !this.reconciler) return;
    const resources = await this.reconciler.pass(declaration);
    this.passes++;
    const report = reportOf(this.node, declaration, resources, new Date());
    if (this.announce === declaration || !sameReport(this.lastReport, report)) {
      if (this.announce === declaration) this.announce = undefined;
      this.lastReport = report;
      this.send(report);
    }
  }

  /**
   * A message on the node's subject. Its signature is checked before its body is read: NODES
   * also stores what anyone aims at the subject (docs/decisions.md), and what the controller did
   * not sign for this node is not applied, not reported on (it is nobody's declaration), and said
   * once at warn — the feed hands each message of NODES over once. The node keeps what it runs.
   */
  private receive(message: DeclarationMessage): void {
    const ignore = (why: string, more: Record<string, unknown> = {}): void => this.logger.warn({ streamSeq: message.streamSeq, why, ...more }, `declaration not applied: ${why}`);
    if (!this.controllerKey) return ignore(NO_CONTROLLER_KEY);
    const unsigned = declarationSignatureProblem(this.controllerKey, message.data, message.signature);
    if (unsigned) return ignore(unsigned);
    let payload: unknown;
    try {
      payload = JSON.parse(new TextDecoder().decode(message.data));
    } catch {
      payload = undefined;
    }
    const named = (payload as { node?: unknown } | undefined)?.node;
    if (typeof named === 'string' && named !== this.node) return ignore(`signed for node ${named}`, { sequence: (payload as { sequence?: unknown }).sequence });
    const judgement = judgeDeclaration(this.node, payload, this.declaration);
    if (!judgement.accepted) {
      this.logger.warn({ sequence: judgement.sequence, refusal: judgement.refusal }, 'declaration refused');
      this.send(refusalReport(this.node, judgement, this.lastReport?.running ?? [], new Date()));
      return;
    }
    if (judgement.changed) {
      this.folder.saveDeclaration(judgement.declaration);
      this.logger.info({ sequence: judgement.declaration.sequence, digest: judgement.declaration.digest }, 'declaration accepted');
    }
    this.declaration = judgement.declaration;
    this.announce = judgement.declaration;
    this.wake('declaration');
  }

  private send(report: Report): void {
    this.outbox.offer(report);
    this.options.onReport?.(report);
  }

  /** A module's bus identity from the controller, over this node's own connection, opened with the key it enrolled with. */
  private askBusIdentity(module: string): Promise<ModuleBusIdentity> {
    if (!this.nc || !this.connected) return Promise.reject(new UnavailableError('the agent is not connected to the bus', { module }));
    return askBusIdentity(this.nc, { node: this.node, module, prefix: this.wire.prefix, sealingSecretKey: nodeIdentity(this.folder.dir).secretKey });
  }

  /** A secret from the vault, asked as this node (signed with its host key), opened with the key it enrolled with. */
  private fetchSecret(secret: string, version?: number): Promise<{ version: number; value: string }> {
    if (!this.nc || !this.connected) return Promise.reject(new UnavailableError('the agent is not connected to the bus', { secret }));
    return fetchSecret(this.nc, { node: this.node, secret, ...(version === undefined ? {} : { version }), prefix: this.wire.prefix, hostKey: hostKey(this.folder.dir), sealingSecretKey: nodeIdentity(this.folder.dir).secretKey });
  }

  private hostKey(): Identity {
    return (this.signingKey ??= hostKey(this.folder.dir));
  }

  private async publishReport(report: Report): Promise<void> {
    if (!this.nc || !this.connected) throw new Error('not connected to NATS');
    const body = JSON.stringify(report);
    // Signed with the host key over the bytes published: the controller acts on nothing else (report-signature.ts).
    const signed = signedMessage('report', this.hostKey(), body);
    await jetstream(this.nc).publish(reportSubject(this.node, this.wire.prefix), signed.body, { msgID: `${this.node}:${sha256(body)}`, timeout: 5_000, headers: signed.headers });
  }

  private heartbeat(): void {
    if (!this.nc || !this.connected) return;
    const body = { node: this.node, at: new Date().toISOString(), sequence: this.declaration?.sequence ?? null, digest: this.declaration?.digest ?? null, capabilities: this.options.capabilities ?? CAPABILITY_KINDS };
    const signed = signedMessage('heartbeat', this.hostKey(), JSON.stringify(body));
    this.nc.publish(aliveSubject(this.node, this.wire.prefix), signed.body, { headers: signed.headers });
  }

  /** Connects for ever (a node outlives any outage of the bus), then follows its declaration subject. */
  private async connectAndFollow(): Promise<void> {
    const signal = this.stopping.signal;
    for (let attempt = 1; !signal.aborted && !this.nc; attempt++) {
      try {
        this.nc = await connectNats(this.options.natsUrl, { name: `mesh-agent-${this.node}`, persistent: true, identity: { key: hostKey(this.folder.dir), inbox: hostInbox(this.node) } });
      } catch (error) {
        this.logger.warn({ err: (error as Error).message }, 'cannot reach NATS; trying again');
        await pause(backoff(attempt, 500, 15_000), signal);
      }
    }
    const nc = this.nc;
    if (!nc) return;
    if (signal.aborted) {
      await nc.close();
      return;
    }
    this.connected = true;
    void this.watchConnection(nc);
    this.heartbeat();
    this.outbox.retryNow();
    await followDeclarations(
      nc,
      { stream: this.wire.nodesStream, subject: declarationSubject(this.node, this.wire.prefix) },
      (payload) => this.receive(payload),
      signal,
      this.logger,
    );
  }

  private async watchConnection(nc: NatsConnection): Promise<void> {
    for await (const status of nc.status()) {
      if (status.type === 'disconnect') {
        this.connected = false;
        this.logger.warn('disconnected from NATS; everything keeps running');
      } else if (status.type === 'reconnect') {
        this.connected = true;
        this.logger.info('reconnected to NATS');
        this.outbox.retryNow();
        // what waited for the control plane (a module's bus identity) may be had now
        this.wake('reconnected');
      }
    }
  }
}
