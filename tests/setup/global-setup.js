// Loaded by jest outside its module system, so it reaches the TypeScript sources through tsx.
import { register } from 'tsx/esm/api';

register();

export default async function globalSetup() {
  const { stackUp } = await import('../../src/dev/stack.ts');
  const { testStack, harnessKeyFile } = await import('./test-stack.ts');
  const started = Date.now();
  const status = await stackUp({ ...testStack(), say: (line) => process.stderr.write(`[test stack] ${line}\n`) });
  process.env.MESH_NATS_URL = status.addresses.natsUrl;
  process.env.MESH_DATABASE_URL = status.addresses.databaseUrl;
  // Every connection a test makes speaks as the harness unless it removes this (see test-stack.ts).
  process.env.MESH_BUS_KEY = harnessKeyFile();
  process.stderr.write(`[test stack] up in ${Date.now() - started} ms: ${status.addresses.natsUrl}, ${status.addresses.databaseUrl}\n`);
}
