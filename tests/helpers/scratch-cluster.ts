import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { meshHome } from '../../src/config.js';
import { natsJetStreamReady, natsUrl, startNatsServer, stopNatsServer, type NatsServerOptions } from '../../src/dev/nats-server.js';
import { freePort, waitFor } from '../../src/dev/ports.js';
import { uniqueName } from './names.js';

/**
 * A JetStream cluster of one test's own: `size` nats-servers on loopback, started by the dev
 * stack's script with free ports, for tests that kill its members. The shared test bus is left alone.
 */
export const scratchCluster = async (label: string, size = 3) => {
  const dir = join(meshHome(), 'tmp', uniqueName(`${label}-`));
  const ports = await Promise.all(Array.from({ length: size }, async () => ({ port: await freePort(), routePort: await freePort() })));
  const members: NatsServerOptions[] = ports.map((p, i) => ({
    dir: join(dir, `nats-${i + 1}`),
    port: p.port,
    cluster: { name: label.replace(/[^a-z0-9]/gi, ''), routePort: p.routePort, peerRoutePorts: ports.filter((_, j) => j !== i).map((q) => q.routePort) },
  }));
  const ready = () => waitFor(`the ${size} servers to agree on a meta leader`, async () => (await Promise.all(members.map((m) => natsJetStreamReady(m)))).every(Boolean), 60_000);
  const remove = async () => {
    await Promise.all(members.map((m) => stopNatsServer(m, 'SIGKILL')));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await Promise.all(members.map((member) => startNatsServer(member)));
    await ready();
  } catch (error) {
    await remove();
    throw error;
  }
  return {
    url: members.map((m) => natsUrl(m.port)).join(','),
    size,
    kill: (i: number) => stopNatsServer(members[i]!, 'SIGKILL'),
    restart: async (i: number) => void (await startNatsServer(members[i]!)),
    /** until every member is back and current with the cluster */
    ready,
    remove,
  };
};
