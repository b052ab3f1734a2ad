import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync, readFileSync, readdirSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/nats-core';
import { meshHome } from '../../src/config.js';
import { ensureIdentityFile, foldSnapshotWriterIdentity, newIdentity } from '../../src/adapters/identity.js';
import { renderBusUsers, writeBusUsers } from '../../src/adapters/nats/bus-users-file.js';
import { connectNats } from '../../src/adapters/nats/connect.js';
import { configLoadTime } from '../../src/adapters/nats/system-account.js';
import { composeBusUsers, CONTROLLER_INBOX, type BusWire } from '../../src/domain/bus/users.js';
import { emptyMeshState } from '../../src/domain/mesh/state.js';
import { natsJetStreamReady, natsPidFile, natsSystemKeyFile, natsUrl, startNatsServer, stopNatsServer } from '../../src/dev/nats-server.js';
import { freePort } from '../../src/dev/ports.js';
import { uniqueName } from '../helpers/names.js';

// The bus's monitor: nats-server raises no HTTP monitor (it answers anyone who reaches it, and told
// every local user each connection's nkey and subscriptions); what the mesh's tools asked it —
// readiness, the time a reloaded user list was taken — is asked of the system account, which
// answers its one user alone.

const WIRE: BusWire = { prefix: 'mesh', logStream: 'LOG', logPrefix: 'mesh.log', nodesStream: 'NODES', controlStream: 'CONTROL', eventsStream: 'EVENTS' };

/** The TCP ports a process listens on, from its sockets' inodes (Linux /proc). */
const listeningPorts = (pid: number): number[] => {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    const target = (() => {
      try {
        return readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        return '';
      }
    })();
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
    if (inode) inodes.add(inode);
  }
  const ports: number[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').trim().split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      // local address, state 0A (LISTEN), inode
      if (fields[3] === '0A' && inodes.has(fields[9] ?? '')) ports.push(parseInt(fields[1]!.split(':')[1]!, 16));
    }
  }
  return ports;
};

const connectRefused = (port: number): Promise<string> =>
  new Promise((resolve) => {
    const socket = createConnection({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });

describe('the bus has no HTTP monitor; the mesh asks its system account', () => {
  const dir = join(meshHome(), 'tmp', uniqueName('monitor-'));
  const usersFile = join(dir, 'bus-users.conf');
  const controllerKey = newIdentity();
  let server: { dir: string; port: number; usersFile: string };
  let controllerNc: NatsConnection;
  let pid: number;

  const harnessKey = process.env.MESH_BUS_KEY;

  beforeAll(async () => {
    // Only the identities this bus composes: the harness must not speak for anybody here.
    delete process.env.MESH_BUS_KEY;
    mkdirSync(dir, { recursive: true });
    writeFileSync(usersFile, renderBusUsers(composeBusUsers(emptyMeshState(), { wire: WIRE, controllerKey: controllerKey.publicKey, snapshotWriterKey: foldSnapshotWriterIdentity(controllerKey).publicKey, moduleKey: () => '', now: new Date() })));
    server = { dir, port: await freePort(), usersFile };
    // Started, and so waited for, through the system account: no monitor answers readiness.
    pid = (await startNatsServer(server)).pid!;
    controllerNc = await connectNats(natsUrl(server.port), { name: 'controller', identity: { key: controllerKey, inbox: CONTROLLER_INBOX } });
  });

  afterAll(async () => {
    await controllerNc?.close();
    await stopNatsServer(server, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    if (harnessKey !== undefined) process.env.MESH_BUS_KEY = harnessKey;
  });

  it('listens on its client port alone: no monitor is raised, and where the stack kept one nothing answers', async () => {
    expect(readFileSync(join(dir, 'nats-server.conf'), 'utf8')).not.toMatch(/^\s*(http|http_port|https|https_port|monitor_port)\s*:/m);
    expect(listeningPorts(pid)).toEqual([server.port]);
    // The test stack's server, raised by the stack's own scripts, keeps no monitor either.
    const stackMonitor = Number(process.env.MESH_TEST_NATS_MONITOR_PORT ?? 28222);
    expect(await connectRefused(stackMonitor)).toBe('ECONNREFUSED');
  });

  it("answers readiness to the system user alone; the key is the stack's, 0600", async () => {
    expect(await natsJetStreamReady(server)).toBe(true);
    expect(statSync(natsSystemKeyFile(server)).mode & 0o777).toBe(0o600);
    // Any other identity on the bus — here the controller itself — finds nobody answering the system subjects.
    await expect(controllerNc.request('$SYS.REQ.SERVER.PING.VARZ', '', { timeout: 1_000 })).rejects.toThrow();
    await expect(controllerNc.request('$SYS.REQ.SERVER.PING.CONNZ', '', { timeout: 1_000 })).rejects.toThrow();
    // Another key is not the system user: it is refused at connect, and so never answered.
    const stranger = join(dir, 'stranger.key');
    ensureIdentityFile(stranger);
    expect(await configLoadTime(natsUrl(server.port), stranger)).toBeUndefined();
    // An anonymous client is refused as before (nats-server 2.9 would let it in beside a system account).
    await expect(connectNats(natsUrl(server.port), { name: 'anonymous' })).rejects.toThrow(/refused|Authorization/i);
  });

  it("confirms a user list's reload through the system account, and says so when it cannot", async () => {
    const system = { urls: natsUrl(server.port), keyFile: natsSystemKeyFile(server) };
    const operator = newIdentity();
    const users = [
      ...composeBusUsers(emptyMeshState(), { wire: WIRE, controllerKey: controllerKey.publicKey, snapshotWriterKey: foldSnapshotWriterIdentity(controllerKey).publicKey, moduleKey: () => '', now: new Date() }),
      { kind: 'static' as const, name: 'reader', publicKey: operator.publicKey, inbox: '_INBOX.reader', permissions: { publish: { allow: ['x'] }, subscribe: { allow: ['_INBOX.reader.>'] }, allowResponses: false } },
    ];
    const before = await configLoadTime(system.urls, system.keyFile);
    expect(before).toBeDefined();
    expect(await writeBusUsers({ file: usersFile, serverPidFile: natsPidFile(dir), system }, users)).toEqual({ changed: true, reloaded: true });
    expect(await configLoadTime(system.urls, system.keyFile)).not.toBe(before);
    // and the new user is in at once
    const reader = await connectNats(natsUrl(server.port), { name: 'reader', identity: { key: operator, inbox: '_INBOX.reader' } });
    await reader.close();
    // With a key the system account does not know, the reload still happens but is said unconfirmed.
    const stranger = join(dir, 'stranger-2.key');
    ensureIdentityFile(stranger);
    const outcome = await writeBusUsers({ file: usersFile, serverPidFile: natsPidFile(dir), system: { ...system, keyFile: stranger } }, users.slice(0, -1));
    expect(outcome).toMatchObject({ changed: true, reloaded: false });
    expect(outcome.changed && outcome.why).toMatch(/system account .* did not answer/);
  });
});
