import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { nkeyOf } from '../identity.js';
import type { BusUser } from '../../domain/bus/users.js';

// The composed user list as nats-server reads it: the mesh's half of the server's configuration,
// `include`d by the server's own file from the same folder (design 25 §4). Written whole and
// renamed into place, then the server is told to reload it: users are added and removed live, and
// nobody else's connection is dropped (a removed user's connections are closed by the server).

const quoted = (values: readonly string[]): string => `[${values.map((value) => JSON.stringify(value)).join(', ')}]`;

const renderUser = (user: BusUser): string => {
  const { publish, subscribe, allowResponses } = user.permissions;
  // An empty allow list is no limit at all to nats-server, so "nothing to publish" is said as a deny.
  const publishBlock =
    publish.allow.length > 0
      ? `{ allow: ${quoted(publish.allow)}${publish.deny && publish.deny.length > 0 ? `, deny: ${quoted(publish.deny)}` : ''} }`
      : `{ deny: [">"] }`;
  const subscribeBlock = subscribe.allow.length > 0 ? `{ allow: ${quoted(subscribe.allow)} }` : `{ deny: [">"] }`;
  return [
    `    # ${user.name} (${user.kind}), inbox ${user.inbox}`,
    `    { nkey: ${JSON.stringify(nkeyOf(user.publicKey))}, permissions: { publish: ${publishBlock}, subscribe: ${subscribeBlock}${allowResponses ? ', allow_responses: true' : ''} } }`,
  ].join('\n');
};

export const renderBusUsers = (users: readonly BusUser[]): string =>
  [
    '# The mesh bus users, composed by the control plane from the log. Edits are overwritten.',
    'authorization {',
    '  users: [',
    ...users.map(renderUser),
    '  ]',
    '}',
    '',
  ].join('\n');

export interface BusUsersFileOptions {
  /** the file the server's configuration includes */
  file: string;
  /** the server's pid file: it is signalled to reload (SIGHUP); a cluster's, comma-separated */
  serverPidFile?: string;
  /** the server's monitoring address: the reload is confirmed by its config_load_time; a cluster's, comma-separated in the same order */
  monitorUrl?: string;
}

const configLoadTime = async (monitorUrl: string): Promise<string | undefined> => {
  try {
    const response = await fetch(`${monitorUrl}/varz`);
    return ((await response.json()) as { config_load_time?: string }).config_load_time;
  } catch {
    return undefined;
  }
};

export type WriteOutcome = { changed: false } | { changed: true; reloaded: boolean; why?: string };

/** Writes the list when it differs from the file, then has the server reload it and waits until it has. */
export const writeBusUsers = async (options: BusUsersFileOptions, users: readonly BusUser[]): Promise<WriteOutcome> => {
  const text = renderBusUsers(users);
  if (existsSync(options.file) && readFileSync(options.file, 'utf8') === text) return { changed: false };
  mkdirSync(dirname(options.file), { recursive: true });
  const temporary = `${options.file}.${process.pid}.tmp`;
  writeFileSync(temporary, text, { mode: 0o600 });
  renameSync(temporary, options.file);
  if (!options.serverPidFile) return { changed: true, reloaded: false, why: 'no server pid file is configured (MESH_BUS_SERVER_PID_FILE): the server reloads the file itself' };
  return { changed: true, ...(await reloadServers(options.serverPidFile, options.monitorUrl)) };
};

/**
 * Every server of the bus reloads the list: each enforces it for the clients connected to it. A
 * member that is down reads the file when it starts again, so it is not waited for.
 */
const reloadServers = async (pidFiles: string, monitorUrls: string | undefined): Promise<{ reloaded: boolean; why?: string }> => {
  const monitors = monitorUrls?.split(',') ?? [];
  const outcomes = await Promise.all(pidFiles.split(',').map((pidFile, i) => reloadServer(pidFile, monitors[i])));
  const failed = outcomes.filter((outcome) => !outcome.reloaded);
  if (failed.length === 0) return { reloaded: true };
  return { reloaded: false, why: failed.map((f) => f.why).join('; ') };
};

export const reloadServer = async (pidFile: string, monitorUrl: string | undefined): Promise<{ reloaded: boolean; why?: string }> => {
  const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').trim()) : NaN;
  if (!Number.isInteger(pid) || pid <= 0) return { reloaded: false, why: `no nats-server pid in ${pidFile}` };
  const before = monitorUrl ? await configLoadTime(monitorUrl) : undefined;
  try {
    process.kill(pid, 'SIGHUP');
  } catch (error) {
    return { reloaded: false, why: `cannot signal nats-server (pid ${pid}): ${(error as Error).message}` };
  }
  if (!monitorUrl) return { reloaded: true };
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const now = await configLoadTime(monitorUrl);
    if (now !== undefined && now !== before) return { reloaded: true };
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return { reloaded: false, why: `nats-server (pid ${pid}) did not take the new configuration within 10 s; its log says why` };
};
