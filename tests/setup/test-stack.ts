import { join } from 'node:path';
import { meshHome } from '../../src/config.js';
import type { StackOptions } from '../../src/dev/stack.js';

// The test stack: the dev stack's scripts, in a folder and on ports of its own, so a running
// `mesh dev up` and `npm test` never touch each other.

const port = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);

export const testStack = (): StackOptions => ({
  dir: join(meshHome(), 'test'),
  ports: {
    nats: port('MESH_TEST_NATS_PORT', 24222),
    natsMonitor: port('MESH_TEST_NATS_MONITOR_PORT', 28222),
    postgres: port('MESH_TEST_PG_PORT', 25432),
    http: port('MESH_TEST_HTTP_PORT', 28080),
  },
  meshName: 'test',
  actor: 'test-setup',
  logStream: 'LOG',
  logSubjectPrefix: 'mesh.log',
});
