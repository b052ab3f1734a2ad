import { afterAll, describe, expect, it } from '@jest/globals';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { meshHome } from '../../src/config.js';
import { startNatsServer, stopNatsServer } from '../../src/dev/nats-server.js';
import { freePort } from '../../src/dev/ports.js';
import { runMesh } from '../helpers/cli.js';
import { uniqueName } from '../helpers/names.js';

// A stack whose nats-server was started before the mesh composed its bus users runs open: anyone on
// the machine may connect and write the log. `mesh dev up` says so and stops instead of going on.

describe('a local stack whose bus was started open', () => {
  const dir = join(meshHome(), 'tmp', uniqueName('open-'));
  let nats: { dir: string; port: number } | undefined;
  afterAll(async () => {
    if (nats) await stopNatsServer(nats, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('is refused by mesh dev up, naming the restart that closes it', async () => {
    nats = { dir: join(dir, 'nats'), port: await freePort() };
    await startNatsServer(nats);
    const up = await runMesh(['dev', 'up'], {
      MESH_DEV_DIR: dir,
      MESH_DEV_NATS_PORT: String(nats.port),
      MESH_DEV_PG_PORT: String(await freePort()),
      MESH_DEV_HTTP_PORT: String(await freePort()),
      MESH_NATS_URL: undefined,
      MESH_DATABASE_URL: undefined,
      MESH_BUS_KEY: undefined,
    });
    expect(up.code).toBe(3);
    expect(up.stderr).toContain('was started without the mesh\'s bus user list');
    expect(up.stderr).toContain('npx mesh dev down && npx mesh dev up');
    await runMesh(['dev', 'down'], { MESH_DEV_DIR: dir, MESH_DEV_NATS_PORT: String(nats.port) });
  });
});
