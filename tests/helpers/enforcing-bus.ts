import { rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/nats-core';
import { pino } from 'pino';
import { enrol, tokenBusIdentity } from '../../src/adapters/enrolment-client.js';
import { newEnrolmentToken } from '../../src/adapters/enrolment-tokens.js';
import { foldSnapshotWriterIdentity, newIdentity } from '../../src/adapters/identity.js';
import { renderBusUsers } from '../../src/adapters/nats/bus-users-file.js';
import { connectNats, type BusIdentity } from '../../src/adapters/nats/connect.js';
import { eventsStreamName } from '../../src/adapters/nats/control-streams.js';
import { Agent } from '../../src/agent/agent.js';
import { BusAuthority } from '../../src/controller/bus-authority.js';
import type { ImpersonationMetrics } from '../../src/controller/speaker.js';
import { natsPidFile, natsSystemKeyFile, startNatsServer, stopNatsServer } from '../../src/dev/nats-server.js';
import { freePort } from '../../src/dev/ports.js';
import { composeBusUsers, CONTROLLER_INBOX, type BusWire } from '../../src/domain/bus/users.js';
import { emptyMeshState } from '../../src/domain/mesh/state.js';
import { FAST } from '../agent/harness.js';
import { openTestMesh, waitFor, type testMeshNames } from './test-mesh.js';

// A mesh on a nats-server of its own whose only users are the ones the control plane composes:
// the test's mesh speaks as its controller, each agent as its node's host (joining with a token as
// the token's own identity), each module as its own identity. Nobody speaks as the harness, so
// what the server refuses is what a real mesh's would.

/** `impersonation`: told of every message the mesh's services refuse for naming another identity than the one that sent it */
export const enforcingBusMesh = async (dir: string, names: ReturnType<typeof testMeshNames>, options: { impersonation?: ImpersonationMetrics; factIntervalMs?: number; schema?: string } = {}) => {
  const harnessKey = process.env.MESH_BUS_KEY;
  delete process.env.MESH_BUS_KEY;
  mkdirSync(dir, { recursive: true });
  const usersFile = join(dir, 'bus-users.conf');
  const wire: BusWire = { ...names, eventsStream: eventsStreamName({ nodes: names.nodesStream, control: names.controlStream, prefix: names.prefix }) };
  const busKey = newIdentity();
  writeFileSync(usersFile, renderBusUsers(composeBusUsers(emptyMeshState(), { wire, controllerKey: busKey.publicKey, snapshotWriterKey: foldSnapshotWriterIdentity(busKey).publicKey, moduleKey: () => '', now: new Date() })));
  const server = { dir, port: await freePort(), usersFile };
  const url = (await startNatsServer(server)).url;
  const t = await openTestMesh({ url, names, identity: { key: busKey, inbox: CONTROLLER_INBOX }, ...options });
  const authority = new BusAuthority({ file: { file: usersFile, serverPidFile: natsPidFile(dir), system: { urls: url, keyFile: natsSystemKeyFile(server) } }, wire, controller: busKey, logger: pino({ level: 'silent' }) });
  const controller = await t.startController({ busAuthority: authority });
  await t.startIngester(controller, options);
  t.startEnrolment();
  t.startBusIdentities(busKey);
  const opened: NatsConnection[] = [];
  const agents: Agent[] = [];

  /** The list is written before the server has reloaded it: a new identity is in once it can connect. */
  const connectWhenKnown = async (label: string, identity: BusIdentity): Promise<NatsConnection> => {
    const nc = await waitFor(`${label} let in`, () => connectNats(url, { name: label, identity }).catch(() => undefined), 20_000);
    opened.push(nc);
    return nc;
  };
  /** A node joining with a token, as the token's own bus identity. */
  const enrolNode = async (node: string, stateDir: string, token: string): Promise<void> => {
    const asToken = await connectWhenKnown(`joining-${node}`, tokenBusIdentity(token));
    await enrol(asToken, { node, token, stateDir, prefix: names.prefix });
    await asToken.close();
  };
  const issueToken = async (node: string): Promise<string> => {
    const token = newEnrolmentToken();
    await t.run({ type: 'issue-enrolment-token', tokenId: token.tokenId, verifier: token.verifier, publicKey: token.publicKey, node, expiresAt: new Date(Date.now() + 600_000).toISOString() });
    return token.token;
  };
  /** An agent for `node` that joins with a token of its own, started. */
  const startAgent = async (node: string, stateDir: string): Promise<Agent> => {
    const agent = new Agent({
      node,
      natsUrl: url,
      stateDir,
      token: await issueToken(node),
      enrol: (request) => enrolNode(request.node, request.stateDir, request.token ?? ''),
      wire: { prefix: names.prefix, nodesStream: names.nodesStream },
      timings: FAST,
      logger: pino({ level: 'silent' }),
    });
    await agent.start();
    agents.push(agent);
    return agent;
  };

  return {
    t,
    url,
    server,
    connectWhenKnown,
    enrolNode,
    issueToken,
    startAgent,
    /** Stops the agents (their processes are the caller's to stop after), the connections, the mesh and the server. */
    stopAgents: async () => {
      for (const agent of agents.splice(0)) await agent.stop();
    },
    close: async () => {
      for (const agent of agents.splice(0)) await agent.stop();
      for (const nc of opened) await nc.close().catch(() => undefined);
      await t.close();
      await stopNatsServer(server, 'SIGKILL');
      rmSync(dir, { recursive: true, force: true });
      if (harnessKey) process.env.MESH_BUS_KEY = harnessKey;
    },
  };
};

export type EnforcingBusMesh = Awaited<ReturnType<typeof enforcingBusMesh>>;
