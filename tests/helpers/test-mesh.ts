import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { pino } from 'pino';
import { connectNats } from '../../src/adapters/nats/connect.js';
import { JetStreamEventLog } from '../../src/adapters/eventlog/jetstream-log.js';
import type { EventLog } from '../../src/adapters/eventlog/event-log.js';
import type { MeshEvent } from '../../src/domain/registry.js';
import type { NatsConnection } from '@nats-io/nats-core';
import { LogWriter } from '../../src/adapters/eventlog/log-writer.js';
import { newIdentity } from '../../src/adapters/identity.js';
import { writePrivateJson } from '../../src/adapters/key-files.js';
import { bootstrapControlPlane } from '../../src/controller/bootstrap.js';
import { BuildCoordinator } from '../../src/controller/build-coordinator.js';
import { BusIdentityService } from '../../src/controller/bus-identity-service.js';
import type { BusAuthority } from '../../src/controller/bus-authority.js';
import type { Identity } from '../../src/adapters/identity.js';
import type { BusIdentity } from '../../src/adapters/nats/connect.js';
import { artifactBucketName, jobsStreamName } from '../../src/adapters/nats/build-streams.js';
import { foldSnapshotBucket } from '../../src/domain/bus/subjects.js';
import { eventsStreamName, type ControlStreamNames } from '../../src/adapters/nats/control-streams.js';
import { Controller, type ControllerOptions, type DeclarationPass } from '../../src/controller/controller.js';
import { EnrolmentService } from '../../src/controller/enrolment-service.js';
import { ProviderAnswerService } from '../../src/controller/provider-answers.js';
import { ReportIngester } from '../../src/controller/report-ingester.js';
import { CommandDispatcher } from '../../src/controller/command-dispatcher.js';
import { sourceProbe } from '../../src/controller/source-probe.js';
import { ToolServer } from '../../src/controller/tool-server.js';
import { createOperatorKey } from '../../src/adapters/operator-keys.js';
import { meshHome } from '../../src/config.js';
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { MeshService } from '../../src/controller/mesh-service.js';
import { MeshView } from '../../src/controller/mesh-view.js';
import { MeshWriter } from '../../src/controller/mesh-writer.js';
import type { ReportMetrics } from '../../src/controller/metrics.js';
import type { ImpersonationMetrics } from '../../src/controller/speaker.js';
import type { MeshCommand } from '../../src/domain/mesh/commands.js';
import { declarationSchema, declarationSubject, type Declaration } from '../../src/domain/declarations/declaration.js';
import { meshEventRegistry } from '../../src/domain/registry.js';
import type { ProjectorSchemas } from '../../src/projections/control.js';
import { testNatsUrl, testReplicas } from './log.js';
import { testDatabaseUrl } from './database.js';
import { uniqueName } from './names.js';
import { startMeshProjector } from '../../src/controller/projections.js';
import { watchStore } from '../../src/controller/health-tool.js';
import type { RunnerSettings } from '../../src/projections/runner.js';

/** A test mesh's stream and subject names, all from its one name. */
export const testMeshNames = (name: string) => ({ logStream: `LOG_${name}`, logPrefix: `${name}.log`, nodesStream: `NODES_${name}`, controlStream: `CONTROL_${name}`, prefix: name });

/**
 * A whole mesh of a test's own: its log, NODES and CONTROL streams under a fresh prefix, bootstrapped.
 * `identity`: who its own connection is (on a server of the test's own that knows no harness);
 * `name`: its names, when the test must know them before (to compose a bus user list).
 */
/** The controller as its process runs it: the parts that need PostgreSQL (projector, store watch) beside it, stopped with it (a test's "the controller stops"). */
class ControllerProcess extends Controller {
  constructor(
    nc: NatsConnection,
    view: MeshView,
    log: EventLog<MeshEvent>,
    options: ControllerOptions,
    private readonly beside: readonly { stop(): Promise<void> }[],
  ) {
    super(nc, view, log, options);
  }

  override async stop(): Promise<void> {
    for (const part of this.beside) await part.stop();
    await super.stop();
  }
}

/** The names a real installation uses (the dev stack's defaults): for a mesh on a server of a test's own, whose agents run `mesh …` programs that read no test's names. */
export const INSTALLATION_NAMES: ReturnType<typeof testMeshNames> = { logStream: 'LOG', logPrefix: 'mesh.log', nodesStream: 'NODES', controlStream: 'CONTROL', prefix: 'mesh' };

/** `impersonation`: told of every message its services refuse for naming another identity than the one that sent it (speaker.ts) */
export const openTestMesh = async (
  options: { url?: string; identity?: BusIdentity; name?: string; names?: ReturnType<typeof testMeshNames>; onStored?: (seq: number) => void; replicas?: number; impersonation?: ImpersonationMetrics } = {},
) => {
  const findings = options.impersonation ? { metrics: options.impersonation } : {};
  const name = options.name ?? uniqueName('t');
  const names = options.names ?? testMeshNames(name);
  /** the same names as the build coordinator and the stream assertions take them */
  const replicas = options.replicas ?? (options.url ? 1 : testReplicas());
  const streamNames: ControlStreamNames = { nodes: names.nodesStream, control: names.controlStream, prefix: names.prefix, replicas };
  const nc = await connectNats(options.url ?? testNatsUrl(), { name: `test-mesh-${name}`, persistent: true, ...(options.identity ? { identity: options.identity } : {}) });
  const jsm: JetStreamManager = await jetstreamManager(nc);
  // The mesh's controller key, and the one writer every log of this test process appends through.
  const controllerKey = newIdentity();
  const writer = new LogWriter(nc, { stream: names.logStream, key: controllerKey, keySource: 'the test mesh', ...(options.onStored ? { onStored: options.onStored } : {}) });
  const newLog = () => new JetStreamEventLog(nc, { stream: names.logStream, subjectPrefix: names.logPrefix, registry: meshEventRegistry(), writer });
  const log = newLog();
  await bootstrapControlPlane(nc, log, { stream: names.logStream, subjectPrefix: names.logPrefix, meshName: name, actor: 'test', controllerKey: controllerKey.publicKey, replicas });
  const mesh = new MeshService(newLog());
  const controllers: Controller[] = [];
  /** each controller's mesh service: its writer states its refusals and its ingester's facts */
  const controllerMeshes = new Map<Controller, MeshService>();
  const views: MeshView[] = [];
  /** A view of this mesh as one controller process holds it: one follower, one fold. */
  const newView = (): MeshView => {
    const view = new MeshView(newLog(), { logger: pino({ level: 'silent' }) });
    view.start();
    views.push(view);
    return view;
  };
  const services: { stop(): void }[] = [];
  const ingesters: ReportIngester[] = [];
  const toolServers: ToolServer[] = [];
  const keyDirs: string[] = [];
  const pools: pg.Pool[] = [];
  const passes: DeclarationPass[] = [];
  let commands = 0;

  /**
   * With `projector`, the controller also folds this mesh's log into PostgreSQL under those schemas;
   * with `busAuthority`, it composes the bus's user list before each pass.
   */
  const startController = async (
    options: {
      projector?: { databaseUrl: string; schemas: ProjectorSchemas; settings?: Partial<RunnerSettings> };
      busAuthority?: BusAuthority;
      storeWatchMs?: number;
      onPass?: (pass: DeclarationPass) => void;
    } = {},
  ): Promise<Controller> => {
    const store = options.projector ? watchStore(nc, names.prefix, options.projector.databaseUrl, { logger: pino({ level: 'silent' }), ...(options.storeWatchMs ? { intervalMs: options.storeWatchMs } : {}) }) : undefined;
    const projector = options.projector
      ? startMeshProjector({
          nc,
          log: newLog(),
          databaseUrl: options.projector.databaseUrl,
          source: { stream: names.logStream, subjectPrefix: names.logPrefix },
          schemas: options.projector.schemas,
          ...(options.projector.settings ? { settings: options.projector.settings } : {}),
          actor: 'controller',
          logger: pino({ level: 'silent' }),
          prefix: names.prefix,
        })
      : undefined;
    // As the controller process composes it: one view, and one writer deciding against it (mesh-writer.ts).
    const view = newView();
    const controllerLog = newLog();
    const controllerMesh = new MeshService(controllerLog, {}, view, new MeshWriter(controllerLog, view, { logger: pino({ level: 'silent' }) }));
    const controller = new ControllerProcess(
      nc,
      view,
      controllerLog,
      {
        mesh: controllerMesh,
        names: { nodesStream: names.nodesStream, controlStream: names.controlStream, prefix: names.prefix, replicas },
        actor: 'controller',
        controllerKey,
        logger: pino({ level: 'silent' }),
        onPass: (pass) => {
          passes.push(pass);
          options.onPass?.(pass);
        },
        ...(options.busAuthority ? { busAuthority: options.busAuthority } : {}),
      },
      [...(projector ? [projector] : []), ...(store ? [store] : [])],
    );
    await controller.start();
    controllers.push(controller);
    controllerMeshes.set(controller, controllerMesh);
    return controller;
  };

  /** The mesh-controller seat's enrol tool, answering on this mesh's prefix. */
  const startEnrolment = (now?: () => Date): EnrolmentService => {
    const service = new EnrolmentService(nc, new MeshService(newLog()), { prefix: names.prefix, natsUrl: options.url ?? testNatsUrl(), controllerKey: controllerKey.publicKey, logger: pino({ level: 'silent' }), ...(now ? { now } : {}), ...findings });
    service.start();
    services.push(service);
    return service;
  };

  /** The mesh-controller seat's bus-identity tool on this mesh's prefix, deriving from `controller`'s key. */
  const startBusIdentities = (controller: Identity): BusIdentityService => {
    const service = new BusIdentityService(nc, new MeshService(newLog()), { prefix: names.prefix, controller, logger: pino({ level: 'silent' }), ...findings });
    service.start();
    services.push(service);
    return service;
  };

  /** Providers' own answer-consumer tool on this mesh's prefix: the proxy hands back public names on it. */
  const startProviderAnswers = (): ProviderAnswerService => {
    const service = new ProviderAnswerService(nc, new MeshService(newLog()), { prefix: names.prefix, logger: pino({ level: 'silent' }), ...findings });
    service.start();
    services.push(service);
    return service;
  };

  const coordinators: BuildCoordinator[] = [];
  /** Turns moved branches into builds and builds into versions, with a short ack wait so a dead builder's job moves on quickly. */
  const startBuilds = async (ackWaitMs = 3_000): Promise<BuildCoordinator> => {
    const view = newView();
    const coordinator = new BuildCoordinator(nc, view, new MeshService(newLog(), {}, view), {
      names: streamNames,
      actor: 'controller',
      logger: pino({ level: process.env.MESH_TEST_LOG ?? 'silent' }),
      ackWaitMs,
    });
    await coordinator.start();
    coordinators.push(coordinator);
    return coordinator;
  };

  /** Reads this mesh's reports into facts, with node status in a PostgreSQL schema of the test's own. */
  const startIngester = async (controller: Controller, options: { databaseUrl?: string; schema?: string; metrics?: ReportMetrics; factIntervalMs?: number } = {}): Promise<ReportIngester> => {
    const pool = new pg.Pool({ connectionString: options.databaseUrl ?? testDatabaseUrl('controller'), max: 2 });
    pool.on('error', () => undefined);
    pools.push(pool);
    const ingester = new ReportIngester(nc, newLog(), {
      names: { nodesStream: names.nodesStream, controlStream: names.controlStream, prefix: names.prefix },
      pool,
      statusSchema: options.schema ?? `status_${name}`,
      actor: 'controller',
      logger: pino({ level: 'silent' }),
      state: () => controller.mesh(),
      held: () => controller.held(),
      reached: (seq) => controller.reached(seq),
      ...(options.metrics ? { metrics: options.metrics } : findings.metrics ? { metrics: { reportRead: () => undefined, factsStated: () => undefined, impersonationRefused: findings.metrics.impersonationRefused.bind(findings.metrics) } } : {}),
      ...(options.factIntervalMs ? { factIntervalMs: options.factIntervalMs } : {}),
      ...(controllerMeshes.has(controller) ? { mesh: controllerMeshes.get(controller)! } : {}),
    });
    await ingester.start();
    ingesters.push(ingester);
    return ingester;
  };

  /** The mesh-controller seat's command tools on this mesh's prefix, as a controller process serves them. */
  const startTools = (): ToolServer => {
    // As the controller process serves them: an operator's build is looked at by a holder of mesh-build-machine first.
    const server = new ToolServer(nc, new CommandDispatcher(new MeshService(newLog()), { probe: sourceProbe(nc, { prefix: names.prefix }) }), { prefix: names.prefix, logger: pino({ level: 'silent' }), ...findings });
    server.start();
    toolServers.push(server);
    return server;
  };

  /**
   * Lets CLI processes send commands to this mesh: a first operator with a key file, registered in
   * the log, and the tools served. Returns the environment a `mesh` child process needs.
   */
  const operatorCommands = async (): Promise<Record<string, string>> => {
    const keyFile = join(meshHome(), 'tmp', uniqueName('operator-'), 'operator.key');
    const key = createOperatorKey(keyFile, 'ada');
    keyDirs.push(dirname(keyFile));
    await mesh.execute({ type: 'add-operator', operator: 'ada', publicKey: key.publicKey }, { commandId: `${name}-operator`, actor: 'genesis' });
    startTools();
    // The controller's key file, as a controller's machine has it (mesh audit verify holds the genesis to it).
    const controllerKeyFile = join(dirname(keyFile), 'controller.key');
    writePrivateJson(controllerKeyFile, controllerKey);
    return { MESH_OPERATOR_KEY: keyFile, MESH_CONTROLLER_KEY: controllerKeyFile, MESH_SUBJECT_PREFIX: names.prefix, MESH_LOG_STREAM: names.logStream, MESH_LOG_SUBJECT_PREFIX: names.logPrefix };
  };

  /** The environment a `mesh` child process reads this mesh with, its projections in `schemas`; also lets it send commands. */
  const readEnv = async (schemas: ProjectorSchemas): Promise<Record<string, string>> => ({
    ...(await operatorCommands()),
    MESH_NATS_URL: options.url ?? testNatsUrl(),
    MESH_NODES_STREAM: names.nodesStream,
    MESH_CONTROL_STREAM: names.controlStream,
    MESH_PROJECTOR_SCHEMA: schemas.control,
    MESH_READ_SCHEMA: schemas.read,
    MESH_CONTROLLER_SCHEMA: `status_${name}`,
  });

  /**
   * The control plane a `mesh` read needs: the controller folding into `schemas`, the report
   * ingester, the command tools. Returns the environment a `mesh` child process reads this mesh with.
   */
  const startControlPlane = async (schemas: ProjectorSchemas, settings?: Partial<RunnerSettings>): Promise<Record<string, string>> => {
    const controller = await startController({ projector: { databaseUrl: testDatabaseUrl(), schemas, ...(settings ? { settings } : {}) } });
    await startIngester(controller);
    return readEnv(schemas);
  };

  return {
    nc,
    jsm,
    /** the controller key this mesh's log was begun with; every commit is signed with it */
    controllerKey,
    writer,
    newLog,
    startTools,
    operatorCommands,
    startEnrolment,
    startBusIdentities,
    startProviderAnswers,
    startIngester,
    startBuilds,
    log,
    names,
    mesh,
    passes,
    startController,
    startControlPlane,
    readEnv,
    run: (command: MeshCommand) => mesh.execute(command, { commandId: `${name}-${++commands}`, actor: 'operator:test' }),
    /** The declaration NODES holds for a node now, if any. */
    declarationOf: async (node: string): Promise<Declaration | undefined> => {
      const message = await jsm.streams.getMessage(names.nodesStream, { last_by_subj: declarationSubject(node, names.prefix) }).catch(() => null);
      return message ? declarationSchema.parse(message.json()) : undefined;
    },
    /** Every message NODES has taken for a node (its stream keeps only the newest, so count via the stream's last sequence). */
    nodesHead: async (): Promise<number> => (await jsm.streams.info(names.nodesStream)).state.last_seq,
    close: async () => {
      for (const ingester of ingesters) await ingester.stop();
      for (const pool of pools) await pool.end().catch(() => undefined);
      for (const service of services) service.stop();
      for (const server of toolServers) server.stop();
      for (const dir of keyDirs) rmSync(dir, { recursive: true, force: true });
      for (const coordinator of coordinators) await coordinator.stop();
      for (const controller of controllers) await controller.stop();
      for (const view of views) await view.stop();
      for (const stream of [names.logStream, names.nodesStream, names.controlStream, eventsStreamName(streamNames), jobsStreamName(names), `OBJ_${artifactBucketName(names)}`, `OBJ_${foldSnapshotBucket(names.logStream)}`]) await jsm.streams.delete(stream).catch(() => undefined);
      await nc.close();
    },
  };
};

export type TestMesh = Awaited<ReturnType<typeof openTestMesh>>;

export const waitFor = async <T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 30_000): Promise<T> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};
