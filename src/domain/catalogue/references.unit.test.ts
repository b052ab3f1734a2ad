import { describe, expect, it } from '@jest/globals';
import { MeshFixture, minimalModule } from '../../../tests/helpers/given.js';

// Registration checks every mount source, every `${…}` reference and every emitted event name
// against what the module declares and what the mesh can provide, refusing them all at once.

const BUS = { name: 'bus', contract: 'mesh-bus', provider: 'module', seat: 'mesh-broker' };
const DATA = { name: 'data', contract: 'directory', provider: 'host' };

const refused = (manifest: unknown, before: (mesh: MeshFixture) => void = () => undefined) => {
  const mesh = new MeshFixture();
  before(mesh);
  return mesh.refusal({ type: 'register-module', manifest });
};

const container = (extra: Record<string, unknown>) => ({ name: 'app', image: { upstream: 'busybox:1.36' }, ...extra });

describe('a container mounts only what its module declared (ADR 0091, 0107)', () => {
  it('refuses a host path, a bare name Docker would make a volume of, and another module\'s directory, all at once', () => {
    const manifest = minimalModule('web', {
      requires: [BUS, DATA],
      resources: {
        directories: [{ requirement: 'data' }],
        containers: [container({ mounts: [{ from: '/srv/web/data', to: '/a' }, { from: 'cache', to: '/b' }, { from: '/var/lib/mesh/gitea/data', to: '/c' }, { from: 'data', to: '/d' }] })],
      },
    });
    const problems = refused(manifest, (mesh) => mesh.registerFixture('gitea'));
    expect(problems).toEqual([
      expect.objectContaining({ what: 'resources.containers.0.mounts.0.from', why: expect.stringContaining('"/srv/web/data" is a host path'), remedy: expect.stringContaining('mount one it declares (data)') }),
      expect.objectContaining({ what: 'resources.containers.0.mounts.1.from', why: expect.stringMatching(/"cache" is neither a requirement nor a file.*named volume.*issue 115/), remedy: expect.stringContaining('{ "name": "cache", "contract": "directory", "provider": "host" }') }),
      expect.objectContaining({ what: 'resources.containers.0.mounts.2.from', why: expect.stringContaining("it looks like module gitea's directory"), remedy: expect.stringContaining("read gitea's data through what gitea provides") }),
    ]);
  });

  it('takes a directory, a secret and a file of its own', () => {
    const mesh = new MeshFixture();
    const manifest = minimalModule('web', {
      requires: [BUS, DATA, { name: 'config', contract: 'directory', provider: 'host' }, { name: 'key', contract: 'secret', provider: 'module', seat: 'mesh-vault' }],
      resources: {
        directories: [{ requirement: 'data' }, { requirement: 'config' }],
        files: [{ name: 'conf', in: 'config', as: 'app.conf', template: 'x' }],
        containers: [container({ mounts: [{ from: 'data', to: '/data' }, { from: 'key', to: '/run/secrets/key' }, { from: 'conf', to: '/etc/app.conf' }] })],
      },
    });
    expect(mesh.register(manifest)).toHaveLength(1);
  });

  it('refuses a requirement that is nothing to mount, and resources naming what is not a directory or a port', () => {
    const problems = refused(
      minimalModule('web', {
        requires: [BUS, DATA, { name: 'colour', contract: 'value', provider: 'operator', default: 'blue' }],
        resources: {
          directories: [{ requirement: 'colour' }],
          files: [{ name: 'f', in: 'nowhere', as: 'f', template: '' }],
          containers: [container({ mounts: [{ from: 'colour', to: '/c' }], ports: [{ requirement: 'data' }] })],
        },
      }),
    );
    expect(problems.map((p) => p.what)).toEqual(['resources.containers.0.mounts.0.from', 'resources.directories.0.requirement', 'resources.files.0.in', 'resources.containers.0.ports.0.requirement']);
  });
});

describe('every reference is one the composer can fill', () => {
  it('refuses a reference of a kind it does not know, and a name that is not a requirement, each naming the value', () => {
    const problems = refused(
      minimalModule('web', {
        requires: [BUS, DATA],
        resources: { processes: [{ name: 'p', run: ['web', '--host', '${route:web}'], env: { URL: 'https://${installation.domain}/', BUCKET: '${answer:store.bucket}' } }] },
      }),
    );
    expect(problems).toEqual([
      expect.objectContaining({ what: 'resources.processes.0.run.2', why: expect.stringContaining('${route:web} names "web", which is no route of this module'), remedy: expect.stringContaining('contribute the route in routes') }),
      expect.objectContaining({ what: 'resources.processes.0.env.URL', why: expect.stringContaining('${installation.domain} names "installation", which is not a requirement of this module'), remedy: expect.stringContaining('bus, data') }),
      expect.objectContaining({ what: 'resources.processes.0.env.BUCKET', why: expect.stringContaining('reference of kind "answer"') }),
    ]);
  });

  it("refuses a field its kind or its provider's contract lacks, and takes one the contract has", () => {
    const requires = [BUS, DATA, { name: 'db', contract: 'postgres-database', provider: 'module' }, { name: 'port', contract: 'port', provider: 'host', port: 80 }, { name: 'who', contract: 'identity', provider: 'mesh' }];
    const problems = refused(minimalModule('web', { requires, resources: { processes: [{ name: 'p', run: ['web', '${db.bucket}', '${db}', '${port.path}', '${who}', '${data.size}'] }] } }));
    expect(problems.map((p) => [p.what, p.why])).toEqual([
      ['resources.processes.0.run.1', expect.stringContaining('"bucket", a field the postgres-database contract lacks')],
      ['resources.processes.0.run.2', expect.stringContaining('names a provision (postgres-database), not a value')],
      ['resources.processes.0.run.3', expect.stringContaining('which a port requirement does not have')],
      ['resources.processes.0.run.4', expect.stringContaining('which a identity requirement does not have')],
      ['resources.processes.0.run.5', expect.stringContaining('which a directory requirement does not have')],
    ]);
    expect(problems[0]?.remedy).toContain('${db.host}');
    const mesh = new MeshFixture();
    expect(mesh.register(minimalModule('web', { requires, resources: { processes: [{ name: 'p', run: ['web', '${db.host}', '${db.address}', '${port}', '${who.name}', '${data.path}', '${bus.credential}'] }] } }))).toHaveLength(1);
  });

  it("checks a provider field against the contract its first provider declared, and takes any while none has", () => {
    const consumer = minimalModule('reader', { requires: [BUS, { name: 'store', contract: 'object-store', provider: 'module' }], resources: { processes: [{ name: 'p', run: ['r', '${store.bucket}'] }] } });
    expect(new MeshFixture().register(consumer)).toHaveLength(1);
    const provider = minimalModule('store', { provides: [{ provision: 'object-store', fields: { url: { type: 'url' } } }] });
    const problems = refused({ ...consumer, name: 'reader2' }, (mesh) => mesh.register(provider));
    expect(problems).toEqual([expect.objectContaining({ why: expect.stringContaining('"bucket", a field the object-store contract lacks'), remedy: 'write one of: ${store.node}, ${store.address}, ${store.url}' })]);
  });

  it("checks a provider's answers against its own requirements, letting it name the consumer", () => {
    const provides = (answers: Record<string, string>) => [{ provision: 'object-store', fields: { url: { type: 'url' }, bucket: { type: 'string' } }, answers }];
    const requires = [BUS, { name: 'who', contract: 'identity', provider: 'mesh' }];
    expect(new MeshFixture().register(minimalModule('store', { requires, provides: provides({ url: 'http://${who.address}', bucket: '${consumer.name}' }) }))).toHaveLength(1);
    expect(refused(minimalModule('store', { requires, provides: provides({ url: 'https://${public.domain}' }) }))).toEqual([expect.objectContaining({ what: 'provides.0.answers.url' })]);
    // which credential the consumer holds: only a provision that gives each consumer a secret has one
    expect(refused(minimalModule('store', { requires, provides: provides({ bucket: '${consumer.login}-${consumer.secret-tag}' }) }))).toEqual([
      expect.objectContaining({ what: 'provides.0.answers.bucket', why: expect.stringContaining('this provision gives its consumers no secret') }),
    ]);
    const perConsumer = [{ ...provides({ bucket: '${consumer.login}-${consumer.secret-tag}' })[0], perConsumerSecret: true }];
    expect(new MeshFixture().register(minimalModule('store', { requires, provides: perConsumer }))).toHaveLength(1);
  });

  it('refuses a host path a container does not mount, and reads the inside path of one it does', () => {
    const problems = refused(
      minimalModule('web', {
        requires: [BUS, DATA, { name: 'logs', contract: 'directory', provider: 'host' }],
        resources: { directories: [{ requirement: 'data' }, { requirement: 'logs' }], containers: [container({ env: { DATA: '${data.path}', LOGS: '${logs}', CRED: '${bus.credential}' }, mounts: [{ from: 'data', to: '/data' }] })] },
      }),
    );
    expect(problems).toEqual([
      expect.objectContaining({ what: 'resources.containers.0.env.LOGS', why: expect.stringContaining('${logs} is a path on the node, and this container does not mount it'), remedy: expect.stringContaining('{ "from": "logs"') }),
      expect.objectContaining({ what: 'resources.containers.0.env.CRED', why: expect.stringContaining('a container cannot mount the bus identity') }),
    ]);
  });
});

describe('an event is its emitter\'s (design 32 §1)', () => {
  it('refuses a local name whose first segment is another registered module\'s name, naming both', () => {
    const problems = refused(minimalModule('mirror', { emits: ['gitea.repository.pushed', 'mirror.synced', 'synced'] }), (mesh) => mesh.registerFixture('gitea'));
    expect(problems).toEqual([
      expect.objectContaining({ what: 'emits.0', why: expect.stringMatching(/"gitea\.repository\.pushed" starts with "gitea", the name of another registered module: it reads as gitea's event, yet mirror would publish it/), remedy: expect.stringContaining('"repository.pushed"') }),
    ]);
  });
});

describe('an env-file is a file, a secret, or the secret a provider makes for this consumer', () => {
  const withEnvFiles = (name: string, requires: unknown[], envFiles: { from: string; reason: string }[]) =>
    minimalModule(name, { requires, resources: { directories: [{ requirement: 'data' }], processes: [{ name, run: [name], envFiles }] } });
  const reason = 'its driver reads the DSN only from the environment';

  it('refuses a directory, a name the module does not have, and a provider that makes no secret, naming each', () => {
    const problems = refused(
      withEnvFiles('reader', [BUS, DATA, { name: 'store', contract: 'object-store', provider: 'module' }], [
        { from: 'data', reason },
        { from: 'dsn', reason },
        { from: 'store', reason },
      ]),
      (mesh) => mesh.register(minimalModule('s3ish', { provides: [{ provision: 'object-store' }] })),
    );
    expect(problems).toEqual([
      expect.objectContaining({ what: 'resources.processes.0.envFiles.0.from', why: '"data" is a directory requirement, and an env-file is a file or a secret' }),
      expect.objectContaining({ what: 'resources.processes.0.envFiles.1.from', why: '"dsn" is not a file or requirement of this module' }),
      expect.objectContaining({ what: 'resources.processes.0.envFiles.2.from', why: expect.stringContaining('no provider of object-store makes its consumers a secret') }),
    ]);
  });

  it('takes a secret requirement and a requirement whose provider makes each consumer a secret (postgres)', () => {
    const mesh = new MeshFixture();
    mesh.registerFixture('postgres');
    mesh.register(withEnvFiles('reader', [BUS, DATA, { name: 'key', contract: 'secret', provider: 'module', seat: 'mesh-vault' }, { name: 'db', contract: 'postgres-database', provider: 'module' }], [
      { from: 'key', reason },
      { from: 'db', reason },
    ]));
  });
});
