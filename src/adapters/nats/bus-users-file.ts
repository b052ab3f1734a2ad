import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { nkeyOf } from '../identity.js';
import type { NatsConnection } from '@nats-io/nats-core';
import type { BusUser } from '../../domain/bus/users.js';
import { askServer, withSystem } from './system-account.js';

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

/**
 * The user an anonymous connection is taken for (`no_auth_user`): it may connect only over MQTT,
 * which the mesh's servers do not listen for, so an anonymous client is refused as before. Without
 * it nats-server 2.9 would let anonymous clients into the global account beside the system account
 * (system-account.ts). Its password is no bcrypt of anything: naming it gets nobody in either.
 */
export const ANONYMOUS_USER = 'anonymous';
const ANONYMOUS_LINE = [
  `    # an anonymous connection is taken for this user, whom no client can be (no MQTT listener)`,
  `    { user: "${ANONYMOUS_USER}", password: "$2a$11$${'0'.repeat(53)}", allowed_connection_types: ["MQTT"] }`,
].join('\n');

export const renderBusUsers = (users: readonly BusUser[]): string =>
  [
    '# The mesh bus users, composed by the control plane from the log. Edits are overwritten.',
    'authorization {',
    '  users: [',
    ANONYMOUS_LINE,
    ...users.map(renderUser),
    '  ]',
    '}',
    '',
  ].join('\n');

/** A list written before the anonymous user was: the user put in, every other line kept as it was. */
export const withAnonymousRefused = (text: string): string =>
  text.includes(`user: "${ANONYMOUS_USER}"`) ? text : text.replace(/^ {2}users: \[\n/m, (head) => `${head}${ANONYMOUS_LINE}\n`);

export interface BusUsersFileOptions {
  /** the file the server's configuration includes */
  file: string;
  /** the server's pid file: it is signalled to reload (SIGHUP); a cluster's, comma-separated */
  serverPidFile?: string;
  /**
   * How the reload is confirmed: each server's config_load_time, asked of its system account as
   * the system user (`keyFile`) at the server's client address (`urls`: a cluster's, comma-separated
   * in the order of the pid files).
   */
  system?: { urls: string; keyFile: string };
}

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
  return { changed: true, ...(await reloadServers(options.serverPidFile, options.system)) };
};

/**
 * Every server of the bus reloads the list: each enforces it for the clients connected to it. A
 * member that is down reads the file when it starts again, so it is not waited for.
 */
const reloadServers = async (pidFiles: string, system: BusUsersFileOptions['system']): Promise<{ reloaded: boolean; why?: string }> => {
  const urls = system?.urls.split(',') ?? [];
  const outcomes = await Promise.all(pidFiles.split(',').map((pidFile, i) => reloadServer(pidFile, system && urls[i] ? { url: urls[i], keyFile: system.keyFile } : undefined)));
  const failed = outcomes.filter((outcome) => !outcome.reloaded);
  if (failed.length === 0) return { reloaded: true };
  return { reloaded: false, why: failed.map((f) => f.why).join('; ') };
};

const signal = (pid: number): { reloaded: boolean; why?: string } => {
  try {
    process.kill(pid, 'SIGHUP');
    return { reloaded: true };
  } catch (error) {
    return { reloaded: false, why: `cannot signal nats-server (pid ${pid}): ${(error as Error).message}` };
  }
};

/**
 * One server reloads: signalled, then asked (over one system-user connection) until its
 * config_load_time moves. A server whose system account does not answer is signalled all the same
 * and the reload said unconfirmed.
 */
export const reloadServer = async (pidFile: string, system: { url: string; keyFile: string } | undefined): Promise<{ reloaded: boolean; why?: string }> => {
  const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').trim()) : NaN;
  if (!Number.isInteger(pid) || pid <= 0) return { reloaded: false, why: `no nats-server pid in ${pidFile}` };
  if (!system) return signal(pid);
  const loadTime = async (nc: NatsConnection, id: string): Promise<string | undefined> => (await askServer<{ config_load_time?: string }>(nc, id, 'VARZ').catch(() => undefined))?.config_load_time;
  try {
    return await withSystem(system.url, system.keyFile, async (nc, id) => {
      const before = await loadTime(nc, id);
      const signalled = signal(pid);
      if (!signalled.reloaded) return signalled;
      const deadline = Date.now() + 10_000;
      while (Date.now() < deadline) {
        const now = await loadTime(nc, id);
        if (now !== undefined && now !== before) return { reloaded: true };
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      return { reloaded: false, why: `nats-server (pid ${pid}) did not take the new configuration within 10 s; its log says why` };
    });
  } catch (error) {
    const signalled = signal(pid);
    return signalled.reloaded ? { reloaded: false, why: `nats-server (pid ${pid}) was signalled, but its system account at ${system.url} did not answer to confirm it: ${(error as Error).message}` } : signalled;
  }
};
