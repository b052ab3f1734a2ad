import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type pg from 'pg';
import { meshHome } from '../../src/config.js';
import { operatorCli } from '../helpers/cli.js';
import { fixtureManifest, minimalModule } from '../helpers/given.js';
import { uniqueName } from '../helpers/names.js';
import { openTestMesh, type TestMesh } from '../helpers/test-mesh.js';
import { dropSchemas, freshSchemas, openPool } from '../projections/harness.js';

// Registration's checks through the CLI against the real servers: mount sources and references
// refused with the field, the value and the remedy, a non-zero exit and nothing appended; and a
// consume nothing emits found, shown by `mesh status` (non-zero) until an emitter registers.

describe('nothing reaches a machine unchecked, and nothing goes quiet', () => {
  let t: TestMesh;
  let env: Record<string, string>;
  let pool: pg.Pool;
  const schemas = freshSchemas();
  const dir = join(meshHome(), 'tmp', uniqueName('checks-'));
  const head = async (): Promise<number> => (await t.jsm.streams.info(t.names.logStream)).state.last_seq;
  const { mesh, manifestFile, refused } = operatorCli(() => ({ env, logHead: head }), dir);
  const refusedRegistration = (manifest: unknown): Promise<string> => refused(['module', 'register', manifestFile(manifest)], 3);

  beforeAll(async () => {
    mkdirSync(dir, { recursive: true });
    pool = openPool();
    t = await openTestMesh();
    env = await t.startControlPlane(schemas);
    await t.run({ type: 'register-module', manifest: fixtureManifest('gitea') });
  });
  afterAll(async () => {
    await t.close();
    await dropSchemas(pool, schemas);
    await pool.end();
    rmSync(dir, { recursive: true, force: true });
  });

  it("refuses an undeclared host path, a bare volume name and another module's directory as mount sources, all in one answer", async () => {
    const name = uniqueName('web');
    const stderr = await refusedRegistration(
      minimalModule(name, {
        resources: {
          containers: [{ name: 'app', image: { upstream: 'busybox:1.36' }, mounts: [{ from: '/srv/app', to: '/a' }, { from: 'appdata', to: '/b' }, { from: '/var/lib/mesh/gitea/data', to: '/c' }] }],
        },
      }),
    );
    expect(stderr).toContain(`registering module ${name} refused`);
    expect(stderr).toMatch(/resources\.containers\.0\.mounts\.0\.from: "\/srv\/app" is a host path, and a container mounts only what its module declares.*declare a directory requirement/);
    expect(stderr).toMatch(/resources\.containers\.0\.mounts\.1\.from: "appdata" is neither a requirement nor a file of this module, and Docker would make a bare name a named volume.*declare it: \{ "name": "appdata", "contract": "directory", "provider": "host" \}/);
    expect(stderr).toMatch(/resources\.containers\.0\.mounts\.2\.from: "\/var\/lib\/mesh\/gitea\/data" is a host path \(it looks like module gitea's directory\)/);
  });

  it('refuses a reference of a kind the composer does not know, and a name of a known kind it cannot fill', async () => {
    const stderr = await refusedRegistration(
      minimalModule(uniqueName('web'), {
        requires: [
          { name: 'bus', contract: 'mesh-bus', provider: 'module', seat: 'mesh-broker' },
          { name: 'db', contract: 'postgres-database', provider: 'module' },
        ],
        resources: { processes: [{ name: 'p', run: ['web'], env: { HOST: 'https://${route:web}', BUCKET: '${db.bucket}', DOMAIN: '${installation.domain}', SITE: '${answer:store.site}' } }] },
      }),
    );
    // `${route:NAME}` is known (issue 122): it names a route the module contributes, and this one contributes none.
    expect(stderr).toMatch(/resources\.processes\.0\.env\.HOST: \$\{route:web\} names "web", which is no route of this module/);
    expect(stderr).toMatch(/resources\.processes\.0\.env\.SITE: \$\{answer:store\.site\} is a reference of kind "answer", which the composer does not know/);
    expect(stderr).toMatch(/resources\.processes\.0\.env\.BUCKET: \$\{db\.bucket\} reads "bucket", a field the postgres-database contract lacks.*write one of: .*\$\{db\.host\}/);
    expect(stderr).toMatch(/resources\.processes\.0\.env\.DOMAIN: \$\{installation\.domain\} names "installation", which is not a requirement of this module/);
  });

  it("refuses a host path a container does not mount, an env-file that is no file or secret, and an event name borrowing another module's", async () => {
    const name = uniqueName('web');
    const stderr = await refusedRegistration(
      minimalModule(name, {
        requires: [
          { name: 'data', contract: 'directory', provider: 'host' },
          { name: 'logs', contract: 'directory', provider: 'host' },
        ],
        emits: ['gitea.repository.pushed'],
        resources: {
          directories: [{ requirement: 'data' }, { requirement: 'logs' }],
          containers: [{ name: 'app', image: { upstream: 'busybox:1.36' }, env: { LOGS: '${logs}' }, mounts: [{ from: 'data', to: '/data' }], envFiles: [{ from: 'data', reason: 'reads its settings from the environment' }] }],
        },
      }),
    );
    expect(stderr).toMatch(/resources\.containers\.0\.env\.LOGS: \$\{logs\} is a path on the node, and this container does not mount it/);
    expect(stderr).toMatch(/resources\.containers\.0\.envFiles\.0\.from: "data" is a directory requirement, and an env-file is a file or a secret/);
    expect(stderr).toMatch(new RegExp(`emits\\.0: "gitea\\.repository\\.pushed" starts with "gitea", the name of another registered module: it reads as gitea's event, yet ${name} would publish it`));
  });

  it('finds a consume nothing emits, shows it in mesh status (non-zero), and clears it when an emitter registers', async () => {
    const [consumer, emitter] = [uniqueName('reader'), uniqueName('shop')];
    const registered = await mesh('module', 'register', manifestFile(minimalModule(consumer, { consumes: [`${emitter}.order.placed`] })), '--json');
    expect(registered.code).toBe(0);
    const seq = String((JSON.parse(registered.stdout) as { seq: number }).seq);

    const listed = await mesh('events', 'dangling', '--json', '--at-least', seq);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toMatchObject({
      dangling: [{ consumer, declared: `${emitter}.order.placed`, subjects: [`${t.names.prefix}.mod.${emitter}.event.order.placed`], why: `no module named ${emitter} is registered` }],
      unconsumed: expect.arrayContaining([{ emitter: 'gitea', event: 'pull.merged', subject: `${t.names.prefix}.mod.gitea.event.pull.merged` }]),
    });
    const status = await mesh('status', '--at-least', seq, '-o', 'wide');
    expect(status.code).toBe(1);
    expect(status.stdout).toContain(`${consumer} consumes ${emitter}.order.placed (${t.names.prefix}.mod.${emitter}.event.order.placed), which matches nothing: no module named ${emitter} is registered`);

    const emitted = await mesh('module', 'register', manifestFile(minimalModule(emitter, { emits: ['order.placed'] })), '--json');
    expect(emitted.code).toBe(0);
    const after = String((JSON.parse(emitted.stdout) as { seq: number }).seq);
    expect(JSON.parse((await mesh('events', 'dangling', '--json', '--at-least', after)).stdout)).toMatchObject({ dangling: [] });
    const cleared = await mesh('status', '--json', '--at-least', after);
    expect(JSON.parse(cleared.stdout)).toMatchObject({ ok: true, danglingConsumes: [] });
    expect(cleared.code).toBe(0);
  });
});
