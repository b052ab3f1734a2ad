import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { closeSync, mkdirSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { meshHome } from '../../src/config.js';
import { waitFor } from '../../src/dev/ports.js';
import { jetstreamManager, StorageType } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { openHealthy } from '../../src/adapters/nats/system-account.js';
import { uniqueName } from './names.js';

// Three nats-servers forming one JetStream cluster, each in a network namespace of its own joined
// to a bridge by a veth pair, as Jepsen partitions a cluster: cutting a member's link cuts it off
// from the others and from every client outside its namespace; restoring it heals the partition.
// Needs root (CI runs as root) and iproute2. Everything it makes has a name of its own and is
// removed by `remove`.

const ip = (...args: string[]): void => void execFileSync('ip', args, { stdio: 'pipe' });

export const canMakeNamespaces = (): boolean => process.getuid?.() === 0;

export const netnsCluster = async (size = 3) => {
  const id = randomInt(0, 0xffff).toString(16).padStart(4, '0');
  const net = `10.231.${randomInt(1, 250)}`;
  const bridge = `mb${id}`;
  const dir = join(meshHome(), 'tmp', uniqueName('netns-'));
  const members = Array.from({ length: size }, (_, i) => ({ ns: `mesh-${id}-${i + 1}`, host: `mv${id}${i + 1}`, peer: `mp${id}${i + 1}`, address: `${net}.${i + 1}` }));
  const children: ChildProcess[] = [];
  const remove = async (): Promise<void> => {
    for (const child of children) child.kill('SIGKILL');
    for (const m of members) {
      try {
        ip('netns', 'del', m.ns);
      } catch {
        // not made, or gone already
      }
    }
    try {
      ip('link', 'del', bridge);
    } catch {
      // not made
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    ip('link', 'add', bridge, 'type', 'bridge');
    ip('addr', 'add', `${net}.254/24`, 'dev', bridge);
    ip('link', 'set', bridge, 'up');
    for (const [i, m] of members.entries()) {
      ip('netns', 'add', m.ns);
      ip('link', 'add', m.host, 'type', 'veth', 'peer', 'name', m.peer);
      ip('link', 'set', m.peer, 'netns', m.ns);
      ip('link', 'set', m.host, 'master', bridge);
      ip('link', 'set', m.host, 'up');
      ip('netns', 'exec', m.ns, 'ip', 'addr', 'add', `${m.address}/24`, 'dev', m.peer);
      ip('netns', 'exec', m.ns, 'ip', 'link', 'set', m.peer, 'up');
      ip('netns', 'exec', m.ns, 'ip', 'link', 'set', 'lo', 'up');
      const home = join(dir, `nats-${i + 1}`);
      mkdirSync(home, { recursive: true });
      const config = join(home, 'nats-server.conf');
      writeFileSync(
        config,
        [
          `server_name: ${m.ns}`,
          `listen: ${m.address}:4222`,
          // no HTTP monitor and no users: health is asked of the JetStream API, as a scratch bus's is
          `jetstream { store_dir: "${join(home, 'jetstream')}" }`,
          `cluster {`,
          `  name: partition${id}`,
          `  listen: ${m.address}:6222`,
          `  routes: [ ${members.filter((o) => o !== m).map((o) => `nats-route://${o.address}:6222`).join(', ')} ]`,
          `}`,
          '',
        ].join('\n'),
      );
      const log = openSync(join(home, 'nats-server.log'), 'a');
      children.push(spawn('ip', ['netns', 'exec', m.ns, 'nats-server', '-c', config], { stdio: ['ignore', log, log] }));
      closeSync(log);
    }
    const healthy = (m: (typeof members)[number]): Promise<boolean> => openHealthy(`nats://${m.address}:4222`);
    const healthOf = async (m: (typeof members)[number]): Promise<string> => `${m.ns}: ${(await healthy(m)) ? 'ok' : 'not current with the cluster, or not answering'}`;
    const ready = async (): Promise<void> => {
      try {
        await waitFor('every member current with the cluster', async () => (await Promise.all(members.map(healthy))).every(Boolean), 60_000);
        // An answer from the JetStream API says a meta leader exists, not that every peer has joined:
        // ready once a stream of `size` replicas can be placed.
        await waitFor(`a stream of ${size} replicas placed`, () => placesReplicas(`nats://${members[0]!.address}:4222`, size), 60_000);
      } catch (error) {
        throw new Error(`${(error as Error).message}: ${(await Promise.all(members.map(healthOf))).join("; ")}`, { cause: error });
      }
    };
    await ready();
    return {
      id,
      size,
      url: (i: number) => `nats://${members[i]!.address}:4222`,
      /** the bridge's own address: where a process in a namespace reaches this host (while its link is up) */
      bridgeAddress: `${net}.254`,
      /** the namespace a process must run in to be on member i's side of a partition */
      namespace: (i: number) => members[i]!.ns,
      cut: (i: number) => ip('link', 'set', members[i]!.host, 'down'),
      heal: (i: number) => ip('link', 'set', members[i]!.host, 'up'),
      ready,
      remove,
    };
  } catch (error) {
    await remove();
    throw error;
  }
};

/** Whether the cluster places a stream of `replicas` now: one is made in memory and removed. */
const placesReplicas = async (url: string, replicas: number): Promise<boolean> => {
  let nc: NatsConnection | undefined;
  try {
    nc = await connect({ servers: url, name: 'netns-ready', maxReconnectAttempts: 0, reconnect: false, timeout: 2_000 });
    const jsm = await jetstreamManager(nc);
    const name = `READY_${randomInt(1_000_000_000)}`;
    await jsm.streams.add({ name, subjects: [`ready.${name}`], num_replicas: replicas, storage: StorageType.Memory });
    await jsm.streams.delete(name).catch(() => undefined);
    return true;
  } catch {
    return false;
  } finally {
    await nc?.close().catch(() => undefined);
  }
};
