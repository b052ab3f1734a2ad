import { spawn } from 'node:child_process';
import { mkdirSync, openSync, writeFileSync, closeSync, existsSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { RefusedError, UnavailableError } from '../errors.js';
import { ensureInstalled, NATS_SERVER } from './packages.js';
import { isListening, waitFor } from './ports.js';
import { defaultSystemKeyFile, openHealthy, systemAccountConfig, systemHealthy } from '../adapters/nats/system-account.js';
import { ANONYMOUS_USER, withAnonymousRefused } from '../adapters/nats/bus-users-file.js';
import { isAlive, ourProcess, waitForExit } from './processes.js';

// One nats-server with JetStream on file storage, on loopback, its data and config in `dir`.
// Debian ships 2.9: no `sync_interval` (2.10), no atomic batch publish (2.12). Every JetStream
// write still reaches the kernel before the publish is acknowledged, so a killed server loses no
// acknowledged message; an OS crash may lose the last seconds (see docs/decisions.md).

export interface NatsServerOptions {
  dir: string;
  port: number;
  /**
   * The bus's system user key (made 0600 when missing): the only way to ask the server what its
   * HTTP monitor would say; no HTTP monitor is raised. A cluster's members share one. Default:
   * `system.key` in `dir`.
   */
  systemKeyFile?: string;
  say?: (line: string) => void;
  /** more configuration (not an authorization block: the mesh's user list is `usersFile`) */
  extraConfig?: string;
  /**
   * The bus user list the control plane composes, in this server's folder: included, so the server
   * enforces it from its first start, and reloaded live when the controller rewrites it.
   */
  usersFile?: string;
  /** a member of a JetStream cluster on loopback: its route port, and the route ports of the others */
  cluster?: NatsClusterMember;
}

export interface NatsClusterMember {
  name: string;
  routePort: number;
  peerRoutePorts: number[];
}

export interface NatsServerStatus {
  running: boolean;
  pid?: number;
  url: string;
  port: number;
  dir: string;
  /** the key of the server's system user, whom its system account answers */
  systemKeyFile: string;
}

const paths = (dir: string) => ({
  config: join(dir, 'nats-server.conf'),
  pidFile: join(dir, 'nats-server.pid'),
  logFile: join(dir, 'nats-server.log'),
  store: join(dir, 'jetstream'),
});

export const natsUrl = (port: number): string => `nats://127.0.0.1:${port}`;

/** The server's system user key: the one named, else the one beside its configuration. */
export const natsSystemKeyFile = (options: Pick<NatsServerOptions, 'dir' | 'systemKeyFile'>): string => options.systemKeyFile ?? defaultSystemKeyFile(options.dir);

/** Whether the server's configuration, as it was written at its start, includes the composed bus users. */
export const natsEnforcesUsers = (dir: string): boolean => existsSync(paths(dir).config) && readFileSync(paths(dir).config, 'utf8').includes('include "bus-users.conf"');

/** Where the server's pid is written: the controller signals it to reload the bus users. */
export const natsPidFile = (dir: string): string => paths(dir).pidFile;

const writeConfig = (options: NatsServerOptions): void => {
  const p = paths(options.dir);
  // A list written before the anonymous user was would not load beside `no_auth_user`.
  if (options.usersFile && existsSync(options.usersFile)) {
    const text = readFileSync(options.usersFile, 'utf8');
    if (withAnonymousRefused(text) !== text) writeFileSync(options.usersFile, withAnonymousRefused(text), { mode: 0o600 });
  }
  const config = [
    `# written by mesh dev: edits are overwritten on the next start`,
    `server_name: mesh_dev_${options.port}`,
    `listen: 127.0.0.1:${options.port}`,
    // No HTTP monitor: it answers anyone who reaches it. What the mesh's tools asked it is asked of
    // the system account (system-account.ts).
    // A server without the mesh's list is open to every client (a test's scratch bus): it has none.
    ...(options.usersFile ? systemAccountConfig(natsSystemKeyFile(options)) : []),
    // an anonymous client is refused (bus-users-file.ts); a server without the mesh's list stays open
    ...(options.usersFile ? [`no_auth_user: ${JSON.stringify(ANONYMOUS_USER)}`] : []),
    `pid_file: "${p.pidFile}"`,
    `max_payload: 1MB`,
    `jetstream {`,
    `  store_dir: "${p.store}"`,
    `}`,
    ...(options.cluster ? clusterBlock(options.cluster) : []),
    options.usersFile ? `include ${JSON.stringify(relative(options.dir, options.usersFile))}` : '',
    options.extraConfig ?? '',
    ``,
  ].join('\n');
  writeFileSync(p.config, config);
};

// Routes are solicited to every other member; a member that is not up yet is retried, so the
// three may start in any order. On one machine, loopback needs no route authorization; across
// machines docs/operations.md says what to add (TLS and a route user).
const clusterBlock = (cluster: NatsClusterMember): string[] => [
  `cluster {`,
  `  name: ${cluster.name}`,
  `  listen: 127.0.0.1:${cluster.routePort}`,
  `  routes: [`,
  ...cluster.peerRoutePorts.map((port) => `    nats-route://127.0.0.1:${port}`),
  `  ]`,
  `}`,
];

/**
 * Whether the server's JetStream is current with the cluster's meta leader (a single server: that
 * it runs): before that a stream cannot be created on it. Asked of its system account.
 */
export const natsJetStreamReady = (options: Pick<NatsServerOptions, 'dir' | 'port' | 'systemKeyFile'>): Promise<boolean> =>
  natsEnforcesUsers(options.dir) ? systemHealthy(natsUrl(options.port), natsSystemKeyFile(options)) : openHealthy(natsUrl(options.port));

export const natsServerStatus = (options: Pick<NatsServerOptions, 'dir' | 'port' | 'systemKeyFile'>): NatsServerStatus => {
  const p = paths(options.dir);
  const pid = ourProcess(p.pidFile, p.config);
  return {
    running: pid !== undefined,
    ...(pid !== undefined ? { pid } : {}),
    url: natsUrl(options.port),
    port: options.port,
    dir: options.dir,
    systemKeyFile: natsSystemKeyFile(options),
  };
};

/** Starts the server unless ours already runs; refuses when another process holds a port. */
export const startNatsServer = async (options: NatsServerOptions): Promise<NatsServerStatus & { started: boolean }> => {
  const say = options.say ?? (() => undefined);
  const current = natsServerStatus(options);
  if (current.running) return { ...current, started: false };

  for (const [port, role] of [
    [options.port, 'NATS client'],
    ...(options.cluster ? [[options.cluster.routePort, 'NATS cluster routes'] as const] : []),
  ] as const) {
    if (await isListening(port)) {
      throw new RefusedError(
        `port ${port} (${role}) on 127.0.0.1 is already taken by another process; stop it, or choose another port with MESH_DEV_NATS_PORT${options.cluster ? ' / MESH_DEV_NATS_CLUSTER_PORT' : ''}`,
        { port, role },
      );
    }
  }

  const binary = ensureInstalled(NATS_SERVER, say);
  const p = paths(options.dir);
  mkdirSync(p.store, { recursive: true });
  writeConfig(options);
  const logFd = openSync(p.logFile, 'a');
  const child = spawn(binary, ['-c', p.config], { detached: true, stdio: ['ignore', logFd, logFd] });
  closeSync(logFd);
  child.unref();
  const exited = new Promise<number | null>((resolveExit) => child.once('exit', (code) => resolveExit(code)));

  try {
    await Promise.race([
      // JetStream enabled is enough here: a cluster's member is current only once its peers are up.
      waitFor(`nats-server on port ${options.port}`, () => (options.usersFile ? systemHealthy(natsUrl(options.port), natsSystemKeyFile(options), { jetStreamEnabled: true }) : openHealthy(natsUrl(options.port), { jetStreamEnabled: true })), 20_000),
      exited.then((code) => {
        throw new UnavailableError(`nats-server exited with code ${code} while starting; its log: ${p.logFile}\n${tail(p.logFile)}`);
      }),
    ]);
  } catch (error) {
    if (child.pid && isAlive(child.pid)) process.kill(child.pid, 'SIGKILL');
    throw error;
  }
  say(`nats-server started on ${natsUrl(options.port)} (pid ${child.pid}, data in ${options.dir})`);
  return { ...natsServerStatus(options), started: true };
};

export const stopNatsServer = async (
  options: Pick<NatsServerOptions, 'dir' | 'port' | 'systemKeyFile'>,
  signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM',
): Promise<boolean> => {
  const status = natsServerStatus(options);
  if (!status.running || status.pid === undefined) return false;
  process.kill(status.pid, signal);
  if (!(await waitForExit(status.pid, 15_000))) {
    process.kill(status.pid, 'SIGKILL');
    await waitForExit(status.pid, 5_000);
  }
  // The kernel releases the listening socket a moment after the process is gone.
  await waitFor(`port ${options.port} to be released`, async () => !(await isListening(options.port)), 5_000);
  return true;
};

const tail = (file: string, lines = 15): string =>
  existsSync(file) ? readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n') : '';
