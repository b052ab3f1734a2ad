import { afterAll, describe, expect, it } from '@jest/globals';
import { createServer, connect as tcpConnect, type AddressInfo, type Socket } from 'node:net';
import { openControllersMesh } from '../helpers/controller-processes.js';
import { cleanupsAfter, report } from '../helpers/faults.js';
import { canMakeNamespaces, netnsCluster } from '../helpers/netns-cluster.js';
import { uniqueName } from '../helpers/names.js';
import { waitFor } from '../helpers/test-mesh.js';

// The writer controller on the minority side of a partition, as Jepsen makes one: it runs inside
// the third member's network namespace, reaching the bus through that member alone and PostgreSQL
// through the bridge. When the member's link is cut, the controller can no longer renew its lease
// (the lease needs a majority), so it stops writing, saying why (exit 6), rather than believe it
// still decides; nothing sent meanwhile is acknowledged. After healing, a controller on the
// majority's side takes over and the command retried with its id is in the log exactly once.

const LEASE_MS = 3_000;

/** A TCP relay on `host` to `target`: how a process in a namespace reaches the test's PostgreSQL. */
const relay = async (host: string, target: { host: string; port: number }) => {
  const sockets = new Set<Socket>();
  const server = createServer((inbound) => {
    const outbound = tcpConnect(target.port, target.host);
    for (const socket of [inbound, outbound]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => sockets.delete(socket));
    }
    inbound.pipe(outbound).pipe(inbound);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
};

describe('the writer controller on the minority side of a partition', () => {
  const cleanup = cleanupsAfter(afterAll);

  it('stops writing and says why once its member is cut off; after healing the majority’s controller takes over and nothing is lost or doubled', async () => {
    expect({ root: canMakeNamespaces(), why: 'network namespaces and veth pairs need root' }).toEqual({ root: true, why: 'network namespaces and veth pairs need root' });
    const cluster = await netnsCluster();
    cleanup(() => cluster.remove());
    const minority = 2;
    const database = new URL(process.env.MESH_DATABASE_URL ?? '');
    const toDatabase = await relay(cluster.bridgeAddress, { host: database.hostname, port: Number(database.port) });
    cleanup(() => toDatabase.close());
    const relayedDatabase = new URL(database);
    relayedDatabase.hostname = cluster.bridgeAddress;
    relayedDatabase.port = String(toDatabase.port);

    const mesh = await openControllersMesh({ leaseMs: LEASE_MS, url: [cluster.url(0), cluster.url(1)].join(','), replicas: 3, env: { MESH_NATS_CLUSTER_SIZE: '3' } });
    cleanup(() => mesh.close());
    const writer = await mesh.start({ wrap: ['ip', 'netns', 'exec', cluster.namespace(minority)], env: { MESH_NATS_URL: cluster.url(minority), MESH_DATABASE_URL: relayedDatabase.toString() } });
    await waitFor('the controller in the minority’s namespace running every part of the writer', async () => (writer.writingSince() !== undefined ? true : undefined), 60_000);
    const before = uniqueName('before');
    expect(await mesh.send(uniqueName('c'), { type: 'add-node', node: before })).toMatchObject({ ok: true });

    const cutAt = Date.now();
    let exitAt: number | undefined;
    void writer.exited.then(() => (exitAt = Date.now()));
    cluster.cut(minority);
    const duringId = uniqueName('c');
    const during = uniqueName('during');
    const sentDuring = await mesh.send(duringId, { type: 'add-node', node: during }, 8_000).catch((error: Error) => ({ ok: false as const, timedOut: error.message }));
    const code = await Promise.race([writer.exited, new Promise<'running'>((resolve) => setTimeout(() => resolve('running'), 30_000))]);
    const stoppedAfterMs = (exitAt ?? Date.now()) - cutAt;
    const said = writer.lines.find((l) => l.level >= 50 && /no longer the mesh writer/.test(l.msg)) as { msg: string; why?: string } | undefined;

    cluster.heal(minority);
    await cluster.ready();
    const successor = await mesh.start({ env: { MESH_NATS_URL: cluster.url(0) } });
    await waitFor('a controller on the majority’s side serving as the writer', async () => (successor.servingSince() !== undefined ? true : undefined), 60_000);
    const retried = await mesh.send(duringId, { type: 'add-node', node: during });
    const events = await mesh.logEvents();
    const added = (node: string) => events.filter((e) => e.type === 'node.added' && (e.data as { node?: string }).node === node).length;

    report('the writer controller on the minority side of a partition', {
      did: `a controller in the third member's namespace, the writer; that member's link cut; a command sent from the majority's side meanwhile; healed, a controller started on the majority's side and the command retried with its id`,
      found: `the command during the cut ${sentDuring.ok ? 'ACKNOWLEDGED' : 'not acknowledged'}; the minority's controller ${code === 'running' ? 'STILL RUNNING after 30 s' : `stopped with exit ${code} ${stoppedAfterMs} ms after the cut`}, saying: ${said?.why ?? '(nothing)'}; after healing the retried command answered ${JSON.stringify(retried).slice(0, 300)}, in the log ${added(during)} time(s), the one before ${added(before)} time(s)`,
    });
    expect(sentDuring.ok).toBe(false);
    expect(code).toBe(6);
    expect(said?.why).toMatch(/could not be renewed|another controller holds/);
    expect(retried).toMatchObject({ ok: true });
    expect({ before: added(before), during: added(during) }).toEqual({ before: 1, during: 1 });
  });
});
