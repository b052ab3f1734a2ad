import { join } from 'node:path';
import { meshHome } from '../../src/config.js';
import { ensureIdentityFile } from '../../src/adapters/identity.js';
import type { BusUser } from '../../src/domain/bus/users.js';
import type { StackOptions } from '../../src/dev/stack.js';

// The test stack: the dev stack's scripts, in a folder and on ports of its own, so a running
// `mesh dev up` and `npm test` never touch each other. Its nats-server enforces the composed user
// list like any mesh's; beside it the server's administrator lists one principal by hand, the
// harness, which plays each test mesh's control plane under that test's own fresh names
// (MESH_BUS_KEY). Tests of the bus's authority run on servers of their own with no harness.

const port = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);

/**
 * MESH_TEST_NATS_CLUSTER=3 runs the test stack's bus as a JetStream cluster of three nats-servers
 * on loopback (routes and the other members from MESH_TEST_NATS_CLUSTER_PORT on); every stream the
 * tests make is then at three replicas.
 */
export const testClusterSize = (): number => Number(process.env.MESH_TEST_NATS_CLUSTER ?? 1);

export const testStackDir = (): string => join(meshHome(), 'test');
export const harnessKeyFile = (): string => join(testStackDir(), 'harness.key');

export const harnessUser = (): BusUser => ({
  kind: 'static',
  name: 'test harness',
  publicKey: ensureIdentityFile(harnessKeyFile()).identity.publicKey,
  inbox: '_INBOX.admin',
  permissions: { publish: { allow: ['>'] }, subscribe: { allow: ['>'] }, allowResponses: false },
});

export const testStack = (): StackOptions => ({
  dir: testStackDir(),
  ports: {
    nats: port('MESH_TEST_NATS_PORT', 24222),
    postgres: port('MESH_TEST_PG_PORT', 25432),
    http: port('MESH_TEST_HTTP_PORT', 28080),
    natsCluster: port('MESH_TEST_NATS_CLUSTER_PORT', 24240),
  },
  cluster: testClusterSize(),
  meshName: 'test',
  actor: 'test-setup',
  logStream: 'LOG',
  logSubjectPrefix: 'mesh.log',
  staticBusUsers: [harnessUser()],
});
