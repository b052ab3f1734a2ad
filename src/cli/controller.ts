import { rmSync, writeFileSync } from 'node:fs';
import { WRITER_PARTS_RUNNING, WRITER_SERVING } from '../controller/writer-lines.js';
import { hostname } from 'node:os';
import pg from 'pg';
import { pino, type Logger } from 'pino';
import { loadConfig } from '../config.js';
import { foldSnapshotWriterIdentity, loadIdentityFile } from '../adapters/identity.js';
import { eventsStreamName } from '../adapters/nats/control-streams.js';
import { BusAuthority, busUsersFileFromEnv, loadStaticBusUsers } from '../controller/bus-authority.js';
import { CONTROLLER_INBOX, SNAPSHOT_WRITER_INBOX } from '../domain/bus/users.js';
import { databaseUrlFor } from '../adapters/database-logins.js';
import { connectNats } from '../adapters/nats/connect.js';
import { JetStreamEventLog } from '../adapters/eventlog/jetstream-log.js';
import { LogWriter } from '../adapters/eventlog/log-writer.js';
import { beginLog, defineSystemSeats } from '../controller/bootstrap.js';
import { BuildCoordinator } from '../controller/build-coordinator.js';
import { BusIdentityService } from '../controller/bus-identity-service.js';
import { ProviderAnswerService } from '../controller/provider-answers.js';
import { SecretKeeper } from '../controller/secret-keeper.js';
import { Controller } from '../controller/controller.js';
import { EnrolmentService } from '../controller/enrolment-service.js';
import { MeshService } from '../controller/mesh-service.js';
import { MeshView } from '../controller/mesh-view.js';
import { MeshWriter } from '../controller/mesh-writer.js';
import { WriterLease, writerLeaseSettingsFromEnv, writerLeaseStream, writerLeaseSubject } from '../adapters/nats/writer-lease.js';
import { FoldSnapshots } from '../controller/fold-snapshots.js';
import { FoldSnapshotStore } from '../adapters/nats/fold-snapshot-store.js';
import { foldCodeVersion } from '../adapters/fold-version.js';
import type { NatsConnection } from '@nats-io/nats-core';
import { snapshotScheduleFromEnv } from './fold-snapshot-settings.js';
import { startMeshProjector } from '../controller/projections.js';
import { watchStore } from '../controller/health-tool.js';
import { runnerSettingsFromEnv } from '../projections/runner.js';
import { statusSchemaFromEnv } from '../controller/node-status.js';
import { heartbeatThresholdMs } from '../controller/overview.js';
import { ReportIngester } from '../controller/report-ingester.js';
import { factIntervalFromEnv } from '../controller/fact-budget.js';
import { CommandDispatcher } from '../controller/command-dispatcher.js';
import { RefusedCommandStore } from '../adapters/nats/refused-commands.js';
import { isTransientJetStreamError } from '../adapters/nats/transient.js';
import { outcomeOf } from '../adapters/command-client.js';
import type { CommandResult } from '../controller/mesh-service.js';
import { sourceProbe } from '../controller/source-probe.js';
import { DEFAULT_MAX_PAYLOAD } from '../domain/operators/command-size.js';
import { DeclarationPublisher } from '../controller/declaration-publisher.js';
import { buildApp } from '../controller/http/app.js';
import { FactFeed } from '../controller/http/fact-feed.js';
import { consoleAccessFromEnv, isLoopback } from '../controller/http/console-access.js';
import { httpLimitsFromEnv } from '../controller/http/limits.js';
import { operatorNamed } from '../domain/operators/state.js';
import { heldReaders, overviewSource } from '../controller/http/overview-source.js';
import { consoleSource } from '../controller/http/console/source.js';
import { ToolServer } from '../controller/tool-server.js';
import { meshProjections } from '../projections/catalogue.js';
import { CommitReader } from '../projections/commit-reader.js';
import { schemasFromEnv } from '../projections/control.js';
import { projectionsStatus } from '../projections/status.js';
import { CatchUpTool } from '../controller/catch-up-tool.js';
import { meshEventRegistry } from '../domain/registry.js';
import { PrometheusMetrics } from '../adapters/prometheus-metrics.js';
import { nodeStateOf } from '../controller/overview.js';
import { readiness } from '../controller/readiness.js';
import { readyMaxLagFromEnv } from './readiness-settings.js';

// `mesh controller`: the control plane's long-running process, in the foreground. Structured logs
// (pino, JSON lines) go to stdout; `mesh dev up` runs it in the background with its log in a file.


/** How long a controller that lost the writer lease may take to stop in order before it exits regardless. */
const FAIL_STOP_WITHIN_MS = 5_000;

export const controllerCommand = async (values: { pidFile?: string }): Promise<number> => {
  const pidFile = values.pidFile;
  const config = loadConfig();
  const snapshotSchedule = snapshotScheduleFromEnv();
  const factIntervalMs = factIntervalFromEnv();
  // Written behind the process rather than one write per line while a busy writer waits on each:
  // lines that pile up during a write go out in the next one, and pino flushes them on exit.
  const logger = pino({ base: { component: 'controller', mesh: config.meshName } }, pino.destination({ dest: 1, sync: false }));
  const readyMaxLag = readyMaxLagFromEnv();
  // The console's bounds and who may read it, checked before anything starts (docs/operations.md).
  const httpLimits = httpLimitsFromEnv();
  const consoleAccess = consoleAccessFromEnv();
  // This process's metrics, in a registry of its own (docs/decisions.md, "Metrics and probes").
  const metrics = new PrometheusMetrics({ processMetrics: true });
  const controllerKey = loadIdentityFile(config.controllerKeyFile, 'the controller signs the log and speaks on the bus with it; `npx mesh dev up` makes it, or set MESH_CONTROLLER_KEY');
  const nc = await connectNats(config.natsUrl, { name: 'mesh-controller', persistent: true, identity: { key: controllerKey, inbox: CONTROLLER_INBOX } });
  // Every stream at the replicas the bus's size gives: 3 on a cluster, 1 on a single server.
  const settings = { stream: config.logStream, subjectPrefix: config.logSubjectPrefix, replicas: config.replicas };
  const busFile = busUsersFileFromEnv(config.natsUrl);
  if (!busFile) logger.warn('MESH_BUS_USERS_FILE is not set: the bus user list is not composed by this controller, so the server enforces whatever it was given');
  const busAuthority = busFile
    ? new BusAuthority({
        file: busFile,
        wire: {
          prefix: config.subjectPrefix,
          logStream: config.logStream,
          logPrefix: config.logSubjectPrefix,
          nodesStream: config.nodesStream,
          controlStream: config.controlStream,
          eventsStream: eventsStreamName({ nodes: config.nodesStream, control: config.controlStream, prefix: config.subjectPrefix }),
        },
        controller: controllerKey,
        statics: loadStaticBusUsers(process.env.MESH_BUS_STATIC_USERS),
        logger: logger.child({ component: 'bus-authority' }),
      })
    : undefined;
  // One writer for every log of this process: each commit signed with the controller's key and
  // chained to the one before (docs/decisions.md, "The log proves itself").
  const writer = new LogWriter(nc, { stream: config.logStream, key: controllerKey, keySource: config.controllerKeyFile, onStored: () => metrics.commitAppended() });
  const newLog = () => new JetStreamEventLog(nc, { ...settings, registry: meshEventRegistry(), writer });
  const log = newLog();
  const begun = await whileJetStreamSettles(logger, () => beginLog(nc, log, { ...settings, meshName: config.meshName, actor: 'controller', controllerKey: controllerKey.publicKey }));
  // Snapshots of the view's fold, in an object store bucket beside the log, written as an identity
  // derived from the controller's that may write that bucket alone (docs/decisions.md, "Snapshots of the fold").
  let snapshotBus: Promise<NatsConnection> | undefined;
  const snapshotWriterBus = (): Promise<NatsConnection> => {
    const connecting = (snapshotBus ??= connectNats(config.natsUrl, { name: 'mesh-controller-snapshots', persistent: true, identity: { key: foldSnapshotWriterIdentity(controllerKey), inbox: SNAPSHOT_WRITER_INBOX } }));
    connecting.catch(() => {
      if (snapshotBus === connecting) snapshotBus = undefined;
    });
    return connecting;
  };
  const snapshots = new FoldSnapshots({
    store: new FoldSnapshotStore(nc, { logStream: config.logStream, fold: 'mesh', writer: snapshotWriterBus, replicas: config.replicas }),
    log,
    stream: config.logStream,
    codeVersion: foldCodeVersion(),
    signer: controllerKey,
    logger: logger.child({ component: 'fold-snapshots' }),
  });
  // The one view of the mesh in this process: one follower, one fold, read by every part below.
  const view = new MeshView(newLog(), { logger, snapshots: { keeper: snapshots, schedule: snapshotSchedule } });
  view.start();
  // The one writer of the mesh in this process: commands, facts and refusals decided in order against the view, their appends pipelined.
  const mesh = new MeshService(log, {}, view, new MeshWriter(log, view, { logger: logger.child({ component: 'writer' }) }));
  // The projector logs in as the role that owns the projections; the rest of the process as the controller.
  const projector = startMeshProjector({
    nc,
    log,
    databaseUrl: databaseUrlFor('projector', config),
    source: settings,
    schemas: schemasFromEnv(),
    settings: runnerSettingsFromEnv(),
    actor: 'controller',
    logger,
    prefix: config.subjectPrefix,
  });
  // Readers that cannot reach PostgreSQL ask the controller since when it has been away.
  const store = watchStore(nc, config.subjectPrefix, databaseUrlFor('projector', config), { logger: logger.child({ component: 'store-watch' }) });
  const pool = new pg.Pool({ connectionString: databaseUrlFor('controller', config), max: 4 });
  // PostgreSQL may be away: reports wait in CONTROL until it is back, and the pool reconnects.
  pool.on('error', (error) => logger.warn({ err: error }, 'PostgreSQL connection lost'));
  // One controller process at a time is the mesh's writer (writer-lease.ts); the others serve
  // reads and pass the commands they are sent on to it.
  const leaseSettings = writerLeaseSettingsFromEnv();
  const lease = new WriterLease(nc, {
    stream: writerLeaseStream(config.logStream),
    subject: writerLeaseSubject(config.subjectPrefix),
    holder: `${hostname()}:${process.pid}`,
    ...leaseSettings,
    replicas: config.replicas,
    logger: logger.child({ component: 'writer-lease' }),
  });
  // An operator's build is looked at by a holder of mesh-build-machine before it is submitted.
  // A command id the writer refused is spent, in a stream beside the log that outlives this process (refused-commands.ts).
  const dispatcher = new CommandDispatcher(mesh, {
    maxPayload: nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD,
    probe: sourceProbe(nc, { prefix: config.subjectPrefix }),
    metrics,
    spent: new RefusedCommandStore(nc, { logStream: config.logStream, prefix: config.subjectPrefix, replicas: config.replicas }),
    logger: logger.child({ component: 'commands' }),
  });
  const tools = new ToolServer(nc, dispatcher, {
    prefix: config.subjectPrefix,
    logger: logger.child({ component: 'tools' }),
    role: { isWriter: () => lease.held(), known: lease.tried, takeoverMs: 2 * leaseSettings.ttlMs + 2_000 },
    metrics,
  });
  tools.start();
  /** the parts that append or declare: run by the writer alone */
  const writing: { stop(): unknown }[] = [];
  const becomeWriter = async (): Promise<void> => {
    await view.whenCaughtUp();
    const seats = begun.held ? { held: begun.held } : await defineSystemSeats(mesh, { meshName: config.meshName, actor: 'controller' });
    const held = begun.held ?? seats.held;
    if (held) logger.error({ seq: held.seq, aggregate: held.aggregate, problem: held.problem }, `the log holds readers at seq ${held.seq}; the controller starts and serves reads, and decides nothing until an operator voids it`);
    // Commands first: they need only the view and the writer, and a takeover is measured to them.
    // What follows from them (declarations, bus users) is composed once the controller's first pass
    // runs, a moment later, as after any start.
    tools.serveAsWriter();
    logger.info({ component: 'writer-lease' }, WRITER_SERVING);
    const controller = new Controller(nc, view, log, {
      names: { nodesStream: config.nodesStream, controlStream: config.controlStream, prefix: config.subjectPrefix, replicas: config.replicas },
      actor: 'controller',
      controllerKey,
      logger,
      mesh,
      onPass: (pass) => metrics.declarationPass(pass),
      ...(busAuthority ? { busAuthority } : {}),
    });
    await controller.start();
    writing.push(controller);
    const enrolment = new EnrolmentService(nc, mesh, {
      prefix: config.subjectPrefix,
      natsUrl: config.natsUrl,
      controllerKey: controllerKey.publicKey,
      logger: logger.child({ component: 'enrolment' }),
      metrics,
    });
    enrolment.start();
    writing.push(enrolment);
    // Modules' bus identities, derived from this controller's key and sealed to the node that runs them.
    const busIdentities = new BusIdentityService(nc, mesh, { prefix: config.subjectPrefix, controller: controllerKey, logger: logger.child({ component: 'bus-identity' }), metrics });
    busIdentities.start();
    writing.push(busIdentities);
    // Providers answering their consumers as themselves, and the proxy handing back public names.
    const providerAnswers = new ProviderAnswerService(nc, mesh, { prefix: config.subjectPrefix, logger: logger.child({ component: 'provider-answers' }), metrics });
    providerAnswers.start();
    writing.push(providerAnswers);
    // Every secret the assignments name, made by the vault and recorded once it holds it.
    const secrets = new SecretKeeper(nc, view, mesh, { prefix: config.subjectPrefix, controller: controllerKey, genesisSecretsFile: config.genesisSecretsFile, actor: 'controller', logger: logger.child({ component: 'secrets' }) });
    secrets.start();
    writing.push(secrets);
    const reports = new ReportIngester(nc, log, {
      names: { nodesStream: config.nodesStream, controlStream: config.controlStream, prefix: config.subjectPrefix },
      pool,
      statusSchema: statusSchemaFromEnv(),
      actor: 'controller',
      logger: logger.child({ component: 'reports' }),
      state: () => view.mesh(),
      held: () => view.held(),
      reached: (seq) => view.reached(seq),
      mesh,
      metrics,
      factIntervalMs,
    });
    await reports.start();
    writing.push(reports);
    const builds = new BuildCoordinator(nc, view, mesh, {
      names: { nodes: config.nodesStream, control: config.controlStream, prefix: config.subjectPrefix, replicas: config.replicas },
      actor: 'controller',
      logger: logger.child({ component: 'builds' }),
    });
    await builds.start();
    writing.push(builds);
    logger.info({ component: 'writer-lease' }, WRITER_PARTS_RUNNING);
  };
  let leaseLost: string | undefined;
  const stopping = new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
    void lease.start({
      onTaken: becomeWriter,
      // Fail-stop: a controller that may no longer be the writer stops rather than write beside another.
      onLost: (why) => {
        leaseLost = why;
        logger.error({ why }, 'this controller is no longer the mesh writer; it stops, so that only one writes (start it again to stand by)');
        // Cut off from the majority, the orderly stop below can wait on the bus or PostgreSQL for
        // as long as the partition lasts: the process goes within a bound whatever it waits on.
        setTimeout(() => {
          logger.error({ why, afterMs: FAIL_STOP_WITHIN_MS }, 'the orderly stop did not finish; exiting now (6) without it');
          logger.flush();
          process.exit(6);
        }, FAIL_STOP_WITHIN_MS).unref();
        resolve();
      },
    });
  });
  const catchUp = new CatchUpTool(nc, newLog(), { prefix: config.subjectPrefix, logger: logger.child({ component: 'catch-up' }) });
  catchUp.start();
  const facts = new FactFeed(newLog(), 50, logger.child({ component: 'facts' }));
  await facts.start(view.whenCaughtUp());
  // Every projection build and the log's head, as `mesh projections status` reads them.
  const commits = new CommitReader(nc, { ...settings, registry: meshEventRegistry() });
  const projectionBuilds = () => projectionsStatus(pool, schemasFromEnv(), commits, meshProjections());
  const overviewOfMesh = overviewSource({
    mesh,
    publisher: new DeclarationPublisher(nc, { nodesStream: config.nodesStream, prefix: config.subjectPrefix, controllerKey: controllerKey.publicKey }),
    pool,
    statusSchema: statusSchemaFromEnv(),
    heartbeatThresholdMs: heartbeatThresholdMs(),
    prefix: config.subjectPrefix,
    // Which of this process's readers the log holds at a commit, and why.
    holds: () => heldReaders({ 'the fact feed': facts.held() }),
    // An outage of PostgreSQL is named with its start, not read as nodes never heard from.
    store: () => store.state(),
    // The projections' health, as `mesh status` judges it: a stall or a lagging build is on the page too.
    projections: async () => {
      const states = await projectionBuilds();
      return states.map((state) => ({
        projection: state.projection,
        lagEvents: state.lagCommits,
        stalledAt: state.stall ? { seq: state.stall.seq, eventType: state.stall.type, sqlstate: state.stall.sqlstate ?? null, error: state.stall.error } : undefined,
        notServing: state.status !== 'serving',
        notMovingSince: state.notMoving?.since.toISOString(),
        stallRetry: state.stall ? { attempts: state.stall.attempts, nextAttemptAt: state.stall.nextAttemptAt?.toISOString() ?? null } : undefined,
      }));
    },
  });
  // The console reads as the CLI does: the projections' read views, NODES, the log.
  const pages = consoleSource({
    pool,
    readSchema: schemasFromEnv().read,
    publisher: new DeclarationPublisher(nc, { nodesStream: config.nodesStream, prefix: config.subjectPrefix, controllerKey: controllerKey.publicKey }),
    statusSchema: statusSchemaFromEnv(),
    heartbeatThresholdMs: heartbeatThresholdMs(),
    prefix: config.subjectPrefix,
    holds: () => heldReaders({ 'the controller': view.held(), 'the fact feed': facts.held() }),
    store: () => store.state(),
    projections: projectionBuilds,
    log: newLog(),
    logSource: { nc, ...settings },
    recentFacts: () => facts.latest(),
  });
  const http = buildApp({
    console: pages,
    overview: overviewOfMesh,
    onFact: (listener) => facts.subscribe(listener),
    recentFacts: () => facts.latest(),
    // Commands over HTTP go where tool calls go: decided by the writer, passed on to it from a standby.
    dispatcher: { dispatch: async (input, verb) => outcomeOf(await tools.call(verb ?? '', input), verb ?? 'command') as CommandResult },
    logger: logger.child({ component: 'http' }),
    metrics: metrics.endpoint({
      logHead: async () => (await commits.head()).seq,
      viewSeq: () => view.mesh().seq,
      projections: projectionBuilds,
      nodeStates: async () => (await overviewOfMesh()).nodes.map(nodeStateOf),
    }),
    readiness: () => readiness({ view, projections: projectionBuilds, maxLagCommits: readyMaxLag }),
    limits: httpLimits,
    // A session is opened by an operator's signature, checked against the key the view holds now.
    access: { settings: consoleAccess, operators: (name) => operatorNamed(view.mesh().operators, name) },
  });
  // Loopback unless configured otherwise: the page is read-only, but it is the mesh's whole picture,
  // and beyond loopback it answers reads only to an operator's session whatever MESH_CONSOLE_AUTH says.
  if (!isLoopback(config.httpHost)) logger.info({ host: config.httpHost }, 'the console listens beyond loopback: every read needs an operator session (`mesh console open`)');
  else if (consoleAccess.auth === 'open') logger.info({ host: config.httpHost }, 'the console is open to every local user (MESH_CONSOLE_AUTH=required asks for an operator session on loopback too)');
  const httpAddress = await http.listen({ host: config.httpHost, port: config.httpPort });
  logger.info({ http: httpAddress }, 'page and API listening');
  // Written once running, so a starter that sees the pid file knows the controller is up.
  if (pidFile) writeFileSync(pidFile, `${process.pid}\n`);
  logger.info({ nats: config.natsUrl }, 'controller started');
  await stopping;
  logger.info('controller stopping');
  await http.close();
  await facts.stop();
  tools.stop();
  catchUp.stop();
  for (const part of writing.reverse()) await part.stop();
  await lease.stop();
  await projector.stop();
  await store.stop();
  await view.stop();
  await (await snapshotBus?.catch(() => undefined))?.close();
  await pool.end();
  await nc.close();
  if (pidFile) rmSync(pidFile, { force: true });
  return leaseLost ? 6 : 0;
};

/**
 * A cluster that has just healed, or a server reloading its user list, answers the JetStream API
 * "temporarily unavailable" (or not at all) for a moment: the log is begun once it answers, for up
 * to a minute, saying so, rather than the controller exiting at its start.
 */
const whileJetStreamSettles = async <T>(logger: Logger, work: () => Promise<T>): Promise<T> => {
  const deadline = Date.now() + 60_000;
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (!isTransientJetStreamError(error) || Date.now() > deadline) throw error;
      logger.warn({ err: (error as Error).message, attempt }, 'JetStream does not answer yet; beginning the log again shortly');
      await new Promise((resolve) => setTimeout(resolve, Math.min(5_000, 250 * attempt)));
    }
  }
};
