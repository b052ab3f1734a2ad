import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { busAuthenticator, ensureIdentityFile, loadIdentityFile, nkeyOf } from '../identity.js';

// What the mesh's own tools used nats-server's HTTP monitor for (readiness, a reload's config load
// time), asked of the server's system account instead. The HTTP monitor has no authentication: on
// loopback every local user could read each connection's nkey and subscriptions. The system account
// answers `$SYS.REQ.SERVER.<id>.<ENDPOINT>` only to its own user, an nkey whose seed is a 0600 file
// in the stack's folder (docs/decisions.md, "The bus's monitor is the system account").
//
// nats-server 2.9 keeps the mesh's users in the global account (`authorization { users }`) with
// JetStream as before, beside an `accounts { SYS }` block that holds this one user.

export const SYSTEM_ACCOUNT = 'SYS';
export const SYSTEM_INBOX = '_INBOX.system';

/** Where a server's system user key is kept when nobody names one: beside its configuration. */
export const defaultSystemKeyFile = (serverDir: string): string => join(serverDir, 'system.key');

/**
 * The server configuration's half: the system account and its one user. Makes the key (0600) when
 * there is none. nats-server 2.9 lets anonymous clients into the global account when the system
 * account is the only other one (fixed in 2.10, nats-server#4605), unless `no_auth_user` names a
 * user: a server enforcing the mesh's list names one that no client can be (bus-users-file.ts).
 */
export const systemAccountConfig = (keyFile: string): string[] => {
  const { identity } = ensureIdentityFile(keyFile);
  return [
    `# the system account: the mesh's tools ask it what the HTTP monitor used to say (no HTTP monitor is raised)`,
    `accounts {`,
    `  ${SYSTEM_ACCOUNT}: { users: [ { nkey: ${JSON.stringify(nkeyOf(identity.publicKey))} } ] }`,
    `}`,
    `system_account: ${SYSTEM_ACCOUNT}`,
  ];
};

/** One short connection to one server as its system user: fails fast, never reconnects. */
export const withSystem = async <T>(url: string, keyFile: string, work: (nc: NatsConnection, serverId: string) => Promise<T>, timeoutMs = 1_000): Promise<T> => {
  const nc = await connect({
    servers: url,
    name: 'mesh-system',
    authenticator: busAuthenticator(loadIdentityFile(keyFile, 'the bus system user')),
    inboxPrefix: SYSTEM_INBOX,
    maxReconnectAttempts: 0,
    reconnect: false,
    timeout: timeoutMs,
  });
  try {
    return await work(nc, nc.info?.server_id ?? '');
  } finally {
    await nc.close();
  }
};

/** One server's own answer to `$SYS.REQ.SERVER.<its id>.<endpoint>`: the server the connection reached, not another member. */
export const askServer = async <T>(nc: NatsConnection, serverId: string, endpoint: string, options: object = {}, timeoutMs = 1_000): Promise<T> => {
  const reply = await nc.request(`$SYS.REQ.SERVER.${serverId}.${endpoint}`, JSON.stringify(options), { timeout: timeoutMs });
  const answer = reply.json<{ data?: T; error?: { description?: string } }>();
  if (answer.data === undefined) throw new Error(`${endpoint}: ${answer.error?.description ?? 'no data'}`);
  return answer.data;
};

/**
 * Whether the server at `url` is healthy, asked as its system user. `jetStreamEnabled`: only that
 * JetStream runs (a cluster member that has not met its peers yet); else that JetStream is current
 * with the cluster's meta leader, which a stream's creation needs.
 */
export const systemHealthy = async (url: string, keyFile: string, options: { jetStreamEnabled?: boolean } = {}): Promise<boolean> => {
  try {
    return await withSystem(url, keyFile, async (nc, id) => (await askServer<{ status?: string }>(nc, id, 'HEALTHZ', options.jetStreamEnabled ? { 'js-enabled-only': true } : {})).status === 'ok');
  } catch {
    return false;
  }
};

/**
 * Whether a server that enforces no users (a test's scratch bus) is healthy: it has no system
 * account — one would make it refuse every client presenting a key it does not list — so an
 * anonymous client asks the JetStream API, which answers once JetStream runs; without an error once a cluster
 * has its meta leader.
 */
export const openHealthy = async (url: string, options: { jetStreamEnabled?: boolean } = {}): Promise<boolean> => {
  let nc: NatsConnection | undefined;
  try {
    nc = await connect({ servers: url, name: 'mesh-health', maxReconnectAttempts: 0, reconnect: false, timeout: 1_000 });
    const reply = await nc.request('$JS.API.INFO', '', { timeout: 1_000 });
    // Any answer means JetStream runs ("temporarily unavailable" until a cluster has its meta leader).
    return options.jetStreamEnabled === true || reply.json<{ error?: unknown }>().error === undefined;
  } catch {
    return false;
  } finally {
    await nc?.close().catch(() => undefined);
  }
};

/** The time the server at `url` last loaded its configuration (VARZ `config_load_time`), or undefined when it does not answer. */
export const configLoadTime = async (url: string, keyFile: string): Promise<string | undefined> => {
  try {
    return await withSystem(url, keyFile, async (nc, id) => (await askServer<{ config_load_time?: string }>(nc, id, 'VARZ')).config_load_time);
  } catch {
    return undefined;
  }
};
