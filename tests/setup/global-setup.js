// Loaded by jest outside its module system, so it reaches the TypeScript sources through tsx.
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { register } from 'tsx/esm/api';

register();

export default async function globalSetup() {
  // dist/ as new as the sources before anything runs `mesh` (the stack's controller first): no
  // test pays a build, and none sees one happen (scripts/build-cli.js).
  const { ensureCliBuilt } = await import('../../scripts/build-cli.js');
  await ensureCliBuilt({ say: (line) => process.stderr.write(`[test stack] ${line}\n`) });
  const { stackDown, stackUp } = await import('../../src/dev/stack.ts');
  const { stackSecretsDir } = await import('../../src/config.ts');
  const { DATABASE_ROLES, passwordFileName } = await import('../../src/adapters/database-logins.ts');
  const { testStack, harnessKeyFile } = await import('./test-stack.ts');
  const started = Date.now();
  const options = { ...testStack(), say: (line) => process.stderr.write(`[test stack] ${line}\n`) };
  let status;
  try {
    status = await stackUp(options);
  } catch (error) {
    // The test stack's mesh is scratch: a log this code cannot extend (begun before commits were
    // signed, or by another controller key) is begun afresh instead of failing every run.
    // Only a refusal about the log itself (it names the stream): a port taken, say, is not mended by this.
    // So is a stack raised with another number of servers (MESH_TEST_NATS_CLUSTER changed).
    const otherCluster = error?.details?.recorded;
    if (error?.code !== 'refused' || (error?.details?.stream === undefined && otherCluster === undefined)) {
      // Whatever of this stack did start is stopped: a failed run leaves no server holding its ports.
      await stackDown(options).catch(() => undefined);
      throw error;
    }
    options.say(`${error.message}\n[test stack] beginning the test stack's log afresh`);
    await stackDown({ ...options, cluster: otherCluster ?? options.cluster });
    for (const entry of readdirSync(options.dir)) if (/^nats(-\d+)?$/.test(entry)) rmSync(join(options.dir, entry), { recursive: true, force: true });
    status = await stackUp(options);
  }
  process.env.MESH_NATS_URL = status.addresses.natsUrl;
  process.env.MESH_DATABASE_URL = status.addresses.databaseUrl;
  // Streams the tests and the controllers they start make are at the replicas the bus's size gives.
  process.env.MESH_NATS_CLUSTER_SIZE = String(options.cluster ?? 1);
  // Each role's password file: the tests, and the CLI verbs they run, log in as the mesh's parts do.
  for (const role of DATABASE_ROLES) process.env[`MESH_PG_PASSWORD_FILE_${role.toUpperCase()}`] = join(stackSecretsDir(testStack().dir), passwordFileName(role));
  // Every connection a test makes speaks as the harness unless it removes this (see test-stack.ts).
  process.env.MESH_BUS_KEY = harnessKeyFile();
  process.stderr.write(`[test stack] up in ${Date.now() - started} ms: ${status.addresses.natsUrl}, ${status.addresses.databaseUrl}\n`);
}
