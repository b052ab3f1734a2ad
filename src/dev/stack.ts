import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { pino } from 'pino';
import { ensureIdentityFile, foldSnapshotWriterIdentity, type Identity } from '../adapters/identity.js';
import { renderBusUsers } from '../adapters/nats/bus-users-file.js';
import { DEFAULT_CONTROL_STREAMS, eventsStreamName } from '../adapters/nats/control-streams.js';
import { loadOperatorKey } from '../adapters/operator-keys.js';
import { BusAuthority } from '../controller/bus-authority.js';
import { MeshService } from '../controller/mesh-service.js';
import { composeBusUsers, CONTROLLER_INBOX, personInbox, type BusUser, type BusWire } from '../domain/bus/users.js';
import { emptyMeshState } from '../domain/mesh/state.js';
import { RefusedError } from '../errors.js';
import { DEFAULT_PORTS, stackFile, stackGenesisSecretsFile, stackSecretsDir, type StackAddresses } from '../config.js';
import { passwordFileName } from '../adapters/database-logins.js';
import { connectNats } from '../adapters/nats/connect.js';
import { JetStreamEventLog } from '../adapters/eventlog/jetstream-log.js';
import { LogWriter } from '../adapters/eventlog/log-writer.js';
import { bootstrapControlPlane, type BootstrapResult } from '../controller/bootstrap.js';
import { CONTROLLER_RECIPIENT, operatorRecipient, postgresFoundationSecrets, recordGenesisSecrets, sealGenesisSecrets } from '../controller/genesis-secrets.js';
import { meshEventRegistry } from '../domain/registry.js';
import { controllerStatus, startController, stopController } from './controller-process.js';
import { ensureFirstOperator, firstOperatorName } from './first-operator.js';
import { demoAgentsStatus, raiseDemo, stopDemo } from './demo.js';
import { natsEnforcesUsers, natsJetStreamReady, natsPidFile, natsServerStatus, natsUrl, startNatsServer, stopNatsServer, type NatsServerOptions, type NatsServerStatus } from './nats-server.js';
import { waitFor } from './ports.js';
import { streamReplicas } from '../adapters/nats/replicas.js';
import { postgresStatus, startPostgres, stopPostgres, type PostgresStatus } from './postgres.js';

// The local stack: a nats-server and a PostgreSQL cluster of the project's own, each on a
// loopback port, their data in one folder; then the control plane's start-up. Used by
// `mesh dev up|down|status`, by the test setup and by the demo, so all three run the same way.

export interface StackPorts {
  nats: number;
  postgres: number;
  /** the controller's page and API */
  http: number;
  /**
   * With a cluster: the first of the ports its members' routes and the other members' client ports
   * take, in a row of 2 + 3 × (servers − 1) (for three: seven) — the slots where their HTTP monitors
   * once listened stay unused, so a cluster raised before keeps its addresses
   */
  natsCluster?: number;
}

export interface StackOptions {
  dir: string;
  ports: StackPorts;
  /** raise the demo mesh too: agents, the fixture catalogue, modules that run (npm start) */
  demo?: { greeterPort: number; callerPort: number; postgresPort: number };
  meshName: string;
  /** how many nats-server processes form the bus: 1, or 3 for a JetStream cluster on loopback */
  cluster?: number;
  /** the first operator's name, at genesis; the user's own name when absent */
  operatorName?: string;
  /**
   * Principals the server's administrator lists beside the composed ones (MESH_BUS_STATIC_USERS):
   * the test stack's harness, which plays every test mesh's control plane on the shared server.
   */
  staticBusUsers?: BusUser[];
  actor: string;
  logStream: string;
  logSubjectPrefix: string;
  say?: (line: string) => void;
}

export interface StackStatus {
  dir: string;
  nats: NatsServerStatus;
  /** every server of a cluster, the first being `nats` */
  natsMembers?: NatsServerStatus[];
  postgres: PostgresStatus;
  controller: { running: boolean; pid?: number; logFile: string };
  /** the demo's agents, when it was raised */
  agents: { node: string; running: boolean; pid?: number; logFile: string }[];
  log?: { stream: string; messages: number; firstSeq: number; lastSeq: number; lastTime: string } | { stream: string; error: string };
}

export const portFromEnv = (name: string): number | undefined => {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`${name}=${raw} is not a TCP port`);
  return port;
};

/** Ports: the environment's, else the ones this stack was last started with, else the defaults. */
export const stackPorts = (dir: string): StackPorts => {
  let recorded: Partial<StackPorts> = {};
  if (existsSync(stackFile(dir))) {
    try {
      recorded = (JSON.parse(readFileSync(stackFile(dir), 'utf8')) as { ports?: Partial<StackPorts> }).ports ?? {};
    } catch {
      recorded = {};
    }
  }
  return {
    nats: portFromEnv('MESH_DEV_NATS_PORT') ?? recorded.nats ?? DEFAULT_PORTS.nats,
    postgres: portFromEnv('MESH_DEV_PG_PORT') ?? recorded.postgres ?? DEFAULT_PORTS.postgres,
    http: portFromEnv('MESH_DEV_HTTP_PORT') ?? recorded.http ?? DEFAULT_PORTS.http,
    natsCluster: portFromEnv('MESH_DEV_NATS_CLUSTER_PORT') ?? recorded.natsCluster ?? DEFAULT_PORTS.natsCluster,
  };
};

/** How many servers the stack in `dir` was last raised with (1 when it never was). */
export const recordedClusterSize = (dir: string): number => {
  if (!existsSync(stackFile(dir))) return 1;
  try {
    return (JSON.parse(readFileSync(stackFile(dir), 'utf8')) as { natsClusterSize?: number }).natsClusterSize ?? 1;
  } catch {
    return 1;
  }
};

type ServerLayout = Pick<StackOptions, 'dir' | 'ports' | 'cluster'>;

/**
 * The stack's nats-servers. The first keeps the single server's folder and ports, so a verb that
 * knows one address reaches the cluster too; the others have folders and ports of their own and
 * include the same composed user list, so every member enforces the same bus.
 */
export const natsMembers = (options: ServerLayout): NatsServerOptions[] => {
  const size = options.cluster ?? 1;
  const users = busFiles(options.dir).users;
  // one system user for the whole bus: the controller confirms every member's reload with it
  const systemKeyFile = busFiles(options.dir).systemKey;
  const first = { dir: join(options.dir, 'nats'), port: options.ports.nats, systemKeyFile, usersFile: users };
  if (size === 1) return [first];
  const base = options.ports.natsCluster ?? DEFAULT_PORTS.natsCluster;
  const routes = Array.from({ length: size }, (_, i) => base + i);
  return routes.map((routePort, i) => ({
    ...(i === 0 ? first : { dir: join(options.dir, `nats-${i + 1}`), port: base + size + 2 * (i - 1), systemKeyFile, usersFile: users }),
    cluster: { name: 'mesh', routePort, peerRoutePorts: routes.filter((port) => port !== routePort) },
  }));
};

const natsOptions = (options: ServerLayout) => natsMembers(options)[0]!;

/** The bus's address as clients are given it: every member's, comma-separated. */
const busUrl = (options: ServerLayout): string => natsMembers(options).map((member) => natsUrl(member.port)).join(',');

/** The bus's half of the stack: the composed user list the server includes, and the hand-listed principals. */
export const busFiles = (dir: string) => ({ users: join(dir, 'nats', 'bus-users.conf'), statics: join(dir, 'nats', 'static-users.json'), systemKey: join(dir, 'nats', 'system.key') });

/** The mesh's own names on the bus, as the stack runs them. */
const stackWire = (options: Pick<StackOptions, 'logStream' | 'logSubjectPrefix'>): BusWire => ({
  prefix: 'mesh',
  logStream: options.logStream,
  logPrefix: options.logSubjectPrefix,
  nodesStream: DEFAULT_CONTROL_STREAMS.nodes,
  controlStream: DEFAULT_CONTROL_STREAMS.control,
  eventsStream: eventsStreamName(DEFAULT_CONTROL_STREAMS),
});

/**
 * Before the server first starts it must already know the controller, or nobody could write the
 * first entry: the list is composed from an empty mesh (the controller and the hand-listed
 * principals) when there is none yet. The controller composes the rest from the log.
 */
const prepareBus = (options: StackOptions, controller: Identity): void => {
  const files = busFiles(options.dir);
  mkdirSync(join(options.dir, 'nats'), { recursive: true });
  writeFileSync(files.statics, `${JSON.stringify(options.staticBusUsers ?? [], null, 2)}\n`, { mode: 0o600 });
  if (existsSync(files.users)) return;
  const users = composeBusUsers(emptyMeshState(), { wire: stackWire(options), controllerKey: controller.publicKey, snapshotWriterKey: foldSnapshotWriterIdentity(controller).publicKey, moduleKey: () => '', now: new Date(), statics: options.staticBusUsers ?? [] });
  writeFileSync(files.users, renderBusUsers(users), { mode: 0o600 });
};

const postgresOptions = (options: Pick<StackOptions, 'dir' | 'ports'>) => ({ dir: join(options.dir, 'postgres'), port: options.ports.postgres, secretsDir: stackSecretsDir(options.dir) });

/**
 * Both servers at once: nats-server boots in its own process while initdb and pg_ctl run, which
 * saves the seconds one would wait for the other. If either refuses (a port taken), the other is
 * stopped again when this call started it, so a refused `up` leaves nothing running.
 */
const startServers = async (options: ServerLayout, say: (line: string) => void) => {
  const [nats, postgres] = await Promise.allSettled([startBus(options, say), startPostgres({ ...postgresOptions(options), say })]);
  if (nats.status === 'fulfilled' && postgres.status === 'fulfilled') return { nats: nats.value, postgres: postgres.value };
  if (nats.status === 'fulfilled' && nats.value.started) await stopBus(options);
  if (postgres.status === 'fulfilled' && postgres.value.started) await stopPostgres(postgresOptions(options));
  throw nats.status === 'rejected' ? nats.reason : (postgres as PromiseRejectedResult).reason;
};

/**
 * Every member at once (each solicits routes to the others), then, for a cluster, until each is
 * current with the meta leader: streams cannot be created before. The first member's status
 * stands for the bus, with the bus's whole address.
 */
const startBus = async (options: ServerLayout, say: (line: string) => void): Promise<NatsServerStatus & { started: boolean }> => {
  const members = natsMembers(options);
  const started = await Promise.allSettled(members.map((member) => startNatsServer({ ...member, say })));
  const failed = started.find((result) => result.status === 'rejected');
  if (failed) {
    for (const [i, result] of started.entries()) if (result.status === 'fulfilled' && result.value.started) await stopNatsServer(members[i]!);
    throw failed.reason;
  }
  const statuses = started.map((result) => (result as PromiseFulfilledResult<NatsServerStatus & { started: boolean }>).value);
  if (members.length > 1) {
    await waitFor(`the ${members.length} nats-servers to elect a JetStream meta leader`, async () => (await Promise.all(members.map((m) => natsJetStreamReady(m)))).every(Boolean), 60_000);
    say(`JetStream cluster of ${members.length} servers formed (routes on ports ${members.map((m) => m.cluster?.routePort).join(', ')})`);
  }
  return { ...statuses[0]!, url: busUrl(options), started: statuses.some((s) => s.started) };
};

const stopBus = async (options: ServerLayout, signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<boolean> => {
  const stopped = await Promise.all(natsMembers(options).map((member) => stopNatsServer(member, signal)));
  return stopped.some(Boolean);
};

/** A stack raised with one number of servers keeps it: its streams' replicas were chosen for it. */
const refuseOtherClusterSize = (options: ServerLayout): void => {
  const recorded = recordedClusterSize(options.dir);
  const wanted = options.cluster ?? 1;
  if (recorded !== wanted && existsSync(join(options.dir, 'nats', 'jetstream'))) {
    throw new RefusedError(
      `the stack in ${options.dir} was raised with ${recorded} nats-server${recorded === 1 ? '' : 's'}, not ${wanted}: its streams were made at ${streamReplicas(recorded)} replica${streamReplicas(recorded) === 1 ? '' : 's'} for that. Raise it as it was (mesh dev up${recorded === 1 ? '' : ` --cluster ${recorded}`}), or begin a new one (mesh dev down, then remove ${join(options.dir, 'nats*')})`,
      { dir: options.dir, recorded, wanted },
    );
  }
};

export const stackUp = async (
  options: StackOptions,
): Promise<StackStatus & { bootstrap: BootstrapResult; addresses: StackAddresses; demo?: { greeterUrl: string; callerUrl: string; postgres: string } }> => {
  const say = options.say ?? (() => undefined);
  mkdirSync(options.dir, { recursive: true });
  const controllerKeyFile = join(options.dir, 'controller.key');
  const controllerKey = ensureIdentityFile(controllerKeyFile);
  if (controllerKey.created) say(`the controller's key: ${controllerKeyFile} (it signs the log and is the controller on the bus)`);
  refuseOtherClusterSize(options);
  prepareBus(options, controllerKey.identity);
  const running = natsServerStatus(natsOptions(options));
  if (running.running && !natsEnforcesUsers(running.dir)) {
    // A server started before the mesh composed its users runs open; only a restart takes the include.
    throw new RefusedError(
      `nats-server (pid ${running.pid}) was started without the mesh's bus user list, so anyone on this machine may connect to it and write the log; restart it: npx mesh dev down && npx mesh dev up`,
      { pid: running.pid },
    );
  }
  const { nats, postgres } = await startServers(options, say);
  if (!nats.started) say(`nats-server already running on ${nats.url} (pid ${nats.pid})`);
  if (!postgres.started) say(`PostgreSQL already running on ${postgres.url} (pid ${postgres.pid})`);

  const clusterSize = options.cluster ?? 1;
  const replicas = streamReplicas(clusterSize);
  const addresses: StackAddresses = { natsUrl: nats.url, databaseUrl: postgres.url, httpPort: options.ports.http, natsClusterSize: clusterSize };
  writeFileSync(stackFile(options.dir), `${JSON.stringify({ ...addresses, ports: options.ports }, null, 2)}\n`);

  // The stack's start-up is the control plane's: it speaks as the controller.
  const nc = await connectNats(nats.url, { name: 'mesh-dev', identity: { key: controllerKey.identity, inbox: CONTROLLER_INBOX } });
  let operatorConnection: NatsConnection | undefined;
  try {
    // Genesis is written here, before the controller runs, with the controller's own key: the
    // controller started below is given the same key file and is the log's writer from then on.
    const key = controllerKey.identity;
    const writer = new LogWriter(nc, { stream: options.logStream, key, keySource: controllerKeyFile });
    const log = new JetStreamEventLog(nc, { stream: options.logStream, subjectPrefix: options.logSubjectPrefix, registry: meshEventRegistry(), writer });
    // One command service, and so one fold of the log, for everything `dev up` reads and does.
    const mesh = new MeshService(log);
    const bootstrap = await bootstrapControlPlane(nc, log, {
      stream: options.logStream,
      subjectPrefix: options.logSubjectPrefix,
      meshName: options.meshName,
      actor: options.actor,
      controllerKey: key.publicKey,
      replicas,
    }, mesh);
    if (bootstrap.held) say(`the log holds readers at seq ${bootstrap.held.seq} (${bootstrap.held.aggregate}): ${bootstrap.held.problem}; see \`npx mesh status\`, and \`npx mesh log void ${bootstrap.held.seq} --reason "…"\` once you have looked`);
    if (bootstrap.stream.created) say(`created the mesh log (stream ${options.logStream}, subjects ${options.logSubjectPrefix}.>)`);
    if (bootstrap.stream.updated.length > 0) say(`brought stream ${options.logStream} back to the mesh log's settings: ${bootstrap.stream.updated.join(', ')}`);
    if (bootstrap.genesis.appended) say(`the log opens with mesh.initialised for mesh "${options.meshName}" at seq ${bootstrap.genesis.seq}`);
    const operator = await ensureFirstOperator(mesh, join(options.dir, 'operator.key'), options.operatorName ?? firstOperatorName());
    if (operator.created) say(`first operator ${operator.name}: signing key in ${operator.file} (readable by you alone)`);
    // The mesh's own first secrets, sealed to the controller's key and the first operator's; the
    // controller hands them to the vault once a holder of mesh-vault is assigned.
    const genesisFile = stackGenesisSecretsFile(options.dir);
    const founded = sealGenesisSecrets(genesisFile, options.meshName, postgresFoundationSecrets(stackSecretsDir(options.dir)), [
      { name: CONTROLLER_RECIPIENT, key: key.publicKey },
      { name: operatorRecipient(operator.name), key: loadOperatorKey(operator.file).publicKey },
    ]);
    if (founded.sealed.length > 0) say(`the mesh's own first secrets (${founded.sealed.join(', ')}): sealed to the controller's key and to ${operator.name}'s in ${genesisFile}`);
    if (!operator.held) {
      const recorded = await recordGenesisSecrets(mesh, founded.recorded, 'genesis');
      if (recorded.length > 0) say(`the log names them (secret.founded), never their values; the vault is handed them once it runs (mesh secret status)`);
    }
    // The operator is on the bus as soon as the log names it, not only once the controller runs.
    const files = busFiles(options.dir);
    // Every member reloads the list (comma-separated, one pid file and client address per server),
    // confirmed by each one's system account.
    const members = natsMembers(options);
    const busFile = { file: files.users, serverPidFile: members.map((m) => natsPidFile(m.dir)).join(','), system: { urls: busUrl(options), keyFile: files.systemKey } };
    await new BusAuthority({ file: busFile, wire: stackWire(options), controller: controllerKey.identity, statics: options.staticBusUsers ?? [], logger: pino({ level: 'silent' }) }).sync(
      await mesh.current(),
    );
    // What every process of the stack (the controller, the demo's agents) is told of where it runs.
    const env = {
      MESH_NATS_URL: addresses.natsUrl,
      MESH_DATABASE_URL: addresses.databaseUrl,
      MESH_LOG_STREAM: options.logStream,
      MESH_LOG_SUBJECT_PREFIX: options.logSubjectPrefix,
      MESH_NATS_CLUSTER_SIZE: String(clusterSize),
    };
    // A controller started while PostgreSQL still trusted every login connected as the superuser:
    // it starts again below with its own roles.
    if (postgres.wasOpen && (await stopController(options.dir))) say('controller stopped, to start again with its own PostgreSQL roles');
    const controllerEnv = {
      ...env,
      MESH_NAME: options.meshName,
      MESH_HTTP_PORT: String(options.ports.http),
      // The controller logs in as the projector (its projections) and as the controller (its tables, its reads).
      MESH_PG_PASSWORD_FILE_PROJECTOR: join(stackSecretsDir(options.dir), passwordFileName('projector')),
      MESH_PG_PASSWORD_FILE_CONTROLLER: join(stackSecretsDir(options.dir), passwordFileName('controller')),
      MESH_CONTROLLER_KEY: controllerKeyFile,
      MESH_GENESIS_SECRETS: genesisFile,
      MESH_BUS_USERS_FILE: busFile.file,
      MESH_BUS_SERVER_PID_FILE: busFile.serverPidFile,
      MESH_BUS_SYSTEM_KEY: files.systemKey,
      MESH_BUS_STATIC_USERS: files.statics,
    };
    const controller = await startController({ dir: options.dir, env: controllerEnv, say });
    if (!controller.started) say(`controller already running (pid ${controller.pid})`);
    if (options.demo) {
      operatorConnection = await connectNats(nats.url, { name: 'mesh-dev-demo', identity: { key: loadOperatorKey(operator.file), inbox: personInbox(operator.name) } });
      const demo = await raiseDemo({
        dir: options.dir,
        nc: operatorConnection,
        mesh,
        natsPort: options.ports.nats,
        subjectPrefix: 'mesh',
        operatorKeyFile: operator.file,
        controllerKey: controllerKey.identity.publicKey,
        ports: { greeter: options.demo.greeterPort, caller: options.demo.callerPort, postgres: options.demo.postgresPort },
        env,
        say,
      });
      return { ...(await stackStatus(options)), bootstrap, addresses, demo };
    }
    return { ...(await stackStatus(options)), bootstrap, addresses };
  } finally {
    await operatorConnection?.close();
    await nc.close();
  }
};

export const stackDown = async (options: Pick<StackOptions, 'dir' | 'ports' | 'say' | 'cluster'>): Promise<{ nats: boolean; postgres: boolean }> => {
  // What the stack started, in reverse: the demo's agents and what they run, the controller, the servers.
  const say = options.say ?? (() => undefined);
  await stopDemo(options.dir, say);
  const controller = await stopController(options.dir);
  say(controller ? 'controller stopped' : 'controller was not running');
  const postgres = await stopPostgres(postgresOptions(options));
  say(postgres ? 'PostgreSQL stopped' : 'PostgreSQL was not running');
  const servers = natsMembers({ ...options, cluster: options.cluster ?? recordedClusterSize(options.dir) });
  const nats = await stopBus({ ...options, cluster: servers.length });
  say(nats ? (servers.length > 1 ? `${servers.length} nats-servers stopped` : 'nats-server stopped') : 'nats-server was not running');
  return { nats, postgres };
};

export const stackStatus = async (options: Pick<StackOptions, 'dir' | 'ports' | 'logStream' | 'cluster'>): Promise<StackStatus> => {
  const layout = { ...options, cluster: options.cluster ?? recordedClusterSize(options.dir) };
  const members = natsMembers(layout).map((member) => natsServerStatus(member));
  // The bus is up while a majority of its servers is: a cluster goes on with one member down.
  const nats = { ...members[0]!, running: members.filter((m) => m.running).length * 2 > members.length, url: busUrl(layout) };
  const postgres = postgresStatus(postgresOptions(options));
  const status: StackStatus = { dir: options.dir, nats, ...(members.length > 1 ? { natsMembers: members } : {}), postgres, controller: controllerStatus(options.dir), agents: demoAgentsStatus(options.dir).filter((a) => a.running) };
  if (!nats.running) return status;
  try {
    const operatorKey = join(options.dir, 'operator.key');
    const key = existsSync(operatorKey) ? loadOperatorKey(operatorKey) : undefined;
    const nc = await connectNats(nats.url, { name: 'mesh-dev-status', ...(key ? { identity: { key, inbox: personInbox(key.operator) } } : {}) });
    try {
      const info = await (await jetstreamManager(nc)).streams.info(options.logStream);
      status.log = {
        stream: options.logStream,
        messages: info.state.messages,
        firstSeq: info.state.first_seq,
        lastSeq: info.state.last_seq,
        lastTime: info.state.last_ts,
      };
    } finally {
      await nc.close();
    }
  } catch (error) {
    status.log = { stream: options.logStream, error: (error as Error).message };
  }
  return status;
};
