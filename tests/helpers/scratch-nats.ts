import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { meshHome } from '../../src/config.js';
import { startNatsServer, stopNatsServer } from '../../src/dev/nats-server.js';
import { freePort } from '../../src/dev/ports.js';
import { uniqueName } from './names.js';

/**
 * A nats-server of one test's own, started by the dev stack's script, for tests that kill or
 * restart the server: the shared test server stays up for everyone else.
 */
export const scratchNats = async (label: string, extra: { extraConfig?: string } = {}) => {
  const options = { dir: join(meshHome(), 'tmp', uniqueName(`${label}-`)), port: await freePort(), ...extra };
  const status = await startNatsServer(options);
  return {
    url: status.url,
    kill: () => stopNatsServer(options, 'SIGKILL'),
    stop: () => stopNatsServer(options, 'SIGTERM'),
    restart: async () => void (await startNatsServer(options)),
    remove: async () => {
      await stopNatsServer(options, 'SIGKILL');
      rmSync(options.dir, { recursive: true, force: true });
    },
  };
};
