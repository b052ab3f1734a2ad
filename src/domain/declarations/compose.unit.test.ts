import { describe, expect, it } from '@jest/globals';
import { MeshFixture, minimalModule, stored } from '../../../tests/helpers/given.js';
import { evolveMesh } from '../mesh/state.js';
import { composeDeclaration, declarationDigest } from './compose.js';
import { resourceSchema, type Resource } from './declaration.js';

const foundation = (): MeshFixture => {
  const mesh = new MeshFixture().node('novox').node('lab1', '/srv/mesh');
  for (const name of ['nats', 'vault', 'postgres', 'gitea']) mesh.registerFixture(name);
  mesh.assign('nats', 'novox', { hold: ['mesh-broker'] });
  mesh.assign('vault', 'novox', { hold: ['mesh-vault'] });
  mesh.assign('postgres', 'novox', { hold: ['mesh-store'] });
  mesh.assign('gitea', 'lab1', { hold: ['mesh-git'], values: { 'public-name': 'git.example' } });
  return mesh;
};

const composed = (mesh: MeshFixture, node: string) => {
  const composition = composeDeclaration(mesh.state, node);
  if (!composition.ok) throw new Error(`not composed: ${JSON.stringify(composition.problems)}`);
  return composition.declaration;
};

describe("composing a node's declaration", () => {
  it('fills every requirement in: directories where they resolved, ports, values, identities; secrets named, never carried', () => {
    const declaration = composed(foundation(), 'lab1');
    expect(declaration.assignments.map((a) => [a.module, a.seats])).toEqual([['gitea', ['mesh-git']]]);
    const resources = new Map(declaration.assignments[0]?.resources.map((r) => [r.key, r]));
    expect(resources.get('gitea/data')).toEqual({ key: 'gitea/data', module: 'gitea', kind: 'directory', path: '/srv/mesh/gitea/data', owner: '1000:1000', mode: '0750' });
    const appIni = resources.get('gitea/app-ini') as Extract<Resource, { kind: 'file' }>;
    expect(appIni.path).toBe('/srv/mesh/gitea/config/app.ini');
    expect(appIni.content).toContain('DOMAIN = git.example');
    expect(appIni.content).toContain('PASSWD = ${secret:postgres-database/lab1-gitea}');
    expect(appIni.content).toContain('HOST = novox:5432\nNAME = lab1-gitea\nUSER = lab1-gitea\n');
    expect(appIni.content).not.toContain('${answer:');
    expect(resources.get('gitea/secret-db-secret')).toMatchObject({ kind: 'secret', secret: 'postgres-database/lab1-gitea', vault: { node: 'novox', module: 'vault' } });
    const container = resources.get('gitea/gitea') as Extract<Resource, { kind: 'container' }>;
    expect(container.ports).toEqual([{ port: 3000, protocol: 'tcp' }]);
    expect(container.mounts).toEqual([
      { source: '/srv/mesh/gitea/data', target: '/data', readOnly: false },
      { source: '/srv/mesh/gitea/config', target: '/etc/gitea', readOnly: false },
    ]);
    expect(container.restartOn).toEqual(['gitea/app-ini']);
    expect(JSON.stringify(declaration)).not.toMatch(/"password"\s*:/);
  });

  it('places the prepare step before what it gates, with the same image, environment and user (ADR 0135)', () => {
    const declaration = composed(foundation(), 'lab1');
    const resources = declaration.assignments[0]?.resources ?? [];
    const prepareAt = resources.findIndex((r) => r.key === 'gitea/prepare');
    const containerAt = resources.findIndex((r) => r.key === 'gitea/gitea');
    expect(prepareAt).toBeGreaterThan(-1);
    expect(prepareAt).toBeLessThan(containerAt);
    const prepare = resources[prepareAt] as Extract<Resource, { kind: 'run-once' }>;
    const container = resources[containerAt] as Extract<Resource, { kind: 'container' }>;
    expect(prepare).toMatchObject({ prepare: true, image: container.image, user: container.user, env: container.env, mounts: container.mounts });
    // both wait for the login the vault makes for gitea: the migration logs in with it
    expect(prepare.after).toEqual(['gitea/secret-db-secret']);
    expect(container.after).toEqual(['gitea/secret-db-secret', 'gitea/prepare']);
    expect(resources.filter((r) => r.kind === 'run-once' && r.prepare)).toHaveLength(1);
  });

  it('composes an empty declaration for a node with nothing assigned: it is still sent', () => {
    const declaration = composed(foundation(), 'lab1');
    const mesh = new MeshFixture().node('empty');
    expect(composed(mesh, 'empty')).toMatchObject({ node: 'empty', assignments: [] });
    expect(declaration.digest).not.toBe(composed(mesh, 'empty').digest);
  });

  it('refuses to compose when a requirement can no longer be resolved, naming every one', () => {
    const mesh = foundation();
    mesh.run({ type: 'unassign', module: 'vault', node: 'novox' });
    const composition = composeDeclaration(mesh.state, 'lab1');
    expect(composition.ok).toBe(false);
    if (composition.ok) return;
    expect(composition.problems.map((p) => p.what)).toEqual(['lab1/gitea requires db-secret (secret)']);
    const novox = composeDeclaration(mesh.state, 'novox');
    expect(novox.ok ? [] : novox.problems.map((p) => p.what)).toEqual(['novox/postgres requires superuser (secret)']);
  });

  it("fills a consumer's reference to its provider's answers, and the identity's address", () => {
    const mesh = new MeshFixture().node('alpha').node('beta');
    mesh.run({ type: 'add-node', node: 'gamma', address: '127.0.0.1' });
    for (const name of ['local-bus', 'greeter', 'caller']) mesh.registerFixture(name);
    mesh.assign('local-bus', 'alpha', { hold: ['mesh-broker'] });
    mesh.assign('greeter', 'gamma', { hold: ['front-desk'], values: { port: '19001' } });
    mesh.assign('caller', 'beta');
    const caller = composed(mesh, 'beta').assignments[0]?.resources[0] as Extract<Resource, { kind: 'process' }>;
    expect(caller.run.slice(3)).toEqual(['http://127.0.0.1:19001', '18082']);
    expect(composed(mesh, 'gamma').assignments[0]?.seats).toEqual(['front-desk']);
  });

  it("places a module's bus identity where `${bus.credential}` points, before anything of the module starts", () => {
    const mesh = new MeshFixture().node('alpha', '/srv/mesh');
    for (const name of ['local-bus', 'audit-logger']) mesh.registerFixture(name);
    mesh.assign('local-bus', 'alpha', { hold: ['mesh-broker'], values: { 'nats-port': '4222' } });
    mesh.assign('audit-logger', 'alpha');
    const logger = composed(mesh, 'alpha').assignments.find((a) => a.module === 'audit-logger');
    expect(logger?.resources.map((r) => r.key)).toEqual(['audit-logger/logs', 'audit-logger/bus-identity', 'audit-logger/audit-logger']);
    // what is public, and nothing of the key
    expect(logger?.resources[1]).toEqual({
      key: 'audit-logger/bus-identity',
      module: 'audit-logger',
      kind: 'bus-identity',
      path: '/srv/mesh/.mesh/audit-logger/bus-identity.json',
      owner: 'root',
      inbox: '_INBOX.audit-logger.alpha',
      consumes: ['**'],
    });
    const process = logger?.resources[2] as Extract<Resource, { kind: 'process' }>;
    expect(process.run.slice(3, 6)).toEqual(['nats://127.0.0.1:4222', '/srv/mesh/.mesh/audit-logger/bus-identity.json', '/srv/mesh/audit-logger/logs/events.jsonl']);
    // held until the identity is there, and started again when it changes
    expect(process.after).toEqual(['audit-logger/bus-identity']);
    expect(process.restartOn).toEqual(['audit-logger/bus-identity']);
  });

  it('places no identity for a module on the bus that never reads its credential, and changes nothing of its resources', () => {
    const mesh = new MeshFixture().node('alpha');
    for (const name of ['local-bus', 'greeter']) mesh.registerFixture(name);
    mesh.assign('local-bus', 'alpha', { hold: ['mesh-broker'] });
    mesh.assign('greeter', 'alpha', { hold: ['front-desk'] });
    const greeter = composed(mesh, 'alpha').assignments.find((a) => a.module === 'greeter');
    expect(greeter?.resources.some((r) => r.kind === 'bus-identity')).toBe(false);
    expect(greeter?.resources.find((r) => r.key === 'greeter/server')).toMatchObject({ after: ['greeter/prepare'], restartOn: ['greeter/greeting-text'] });
    expect(greeter?.resources.find((r) => r.key === 'greeter/prepare')).toMatchObject({ after: [] });
  });

  it('fills `${bus.credential}` in a file, an environment value and a prepare step too, gates the prepare step on the identity, and gives the identity to the user the processes run as', () => {
    const mesh = new MeshFixture().node('alpha');
    mesh.registerFixture('local-bus');
    mesh.register(
      minimalModule('listener', {
        requires: [
          { name: 'bus', contract: 'mesh-bus', provider: 'module', seat: 'mesh-broker' },
          { name: 'data', contract: 'directory', provider: 'host' },
        ],
        consumes: ['greeter.greeted'],
        resources: {
          directories: [{ requirement: 'data' }],
          files: [{ name: 'conf', in: 'data', as: 'listener.conf', template: 'credentials = ${bus.credential}\n', mode: '0644' }],
          prepare: { command: ['check-key', '${bus.credential}'], gates: ['listen'] },
          processes: [{ name: 'listen', run: ['listen', '--conf', '${data.path}/listener.conf'], env: { NATS_IDENTITY: '${bus.credential}' }, user: 'nobody', restartOn: ['conf'] }],
        },
      }),
    );
    mesh.assign('local-bus', 'alpha', { hold: ['mesh-broker'] });
    mesh.assign('listener', 'alpha');
    const resources = new Map(composed(mesh, 'alpha').assignments.find((a) => a.module === 'listener')?.resources.map((r) => [r.key, r]));
    const path = '/var/lib/mesh/.mesh/listener/bus-identity.json';
    expect(resources.get('listener/conf')).toMatchObject({ content: `credentials = ${path}\n` });
    expect(resources.get('listener/bus-identity')).toMatchObject({ path, owner: 'nobody', inbox: '_INBOX.listener.alpha', consumes: ['greeter.greeted'] });
    expect(resources.get('listener/prepare')).toMatchObject({ command: ['check-key', path], after: ['listener/bus-identity'] });
    expect(resources.get('listener/listen')).toMatchObject({ env: { NATS_IDENTITY: path }, after: ['listener/bus-identity', 'listener/prepare'], restartOn: ['listener/conf', 'listener/bus-identity'] });
    expect([...resources.keys()]).toEqual(['listener/data', 'listener/conf', 'listener/bus-identity', 'listener/prepare', 'listener/listen']);
  });

  it('names which credential a consumer holds where its provider answers with it, has the provider wait for its word, and holds it out of a process', () => {
    const mesh = new MeshFixture().node('novox').node('lab1');
    mesh.register({ name: 'test-vault', provides: [{ provision: 'secret' }], canHold: ['mesh-vault'], resources: {} });
    for (const name of ['local-postgres', 'guestbook']) mesh.registerFixture(name);
    mesh.assign('test-vault', 'novox', { hold: ['mesh-vault'] });
    mesh.assign('local-postgres', 'novox');
    mesh.assign('guestbook', 'lab1');
    const pgpass = composed(mesh, 'lab1').assignments[0]?.resources.find((r) => r.key === 'guestbook/pgpass') as Extract<Resource, { kind: 'file' }>;
    // the login named for the value lab1 holds, filled on lab1 from it, beside the value itself
    expect(pgpass.awaitsUse).toBe(true);
    expect(pgpass.content).toBe('novox:15532:lab1-guestbook:lab1-guestbook-${secret-tag:postgres-database/lab1-guestbook}:${secret:postgres-database/lab1-guestbook}\n');
    const atProvider = composed(mesh, 'novox').assignments.find((a) => a.module === 'local-postgres')?.resources.find((r) => r.key === 'local-postgres/consumer-lab1-guestbook');
    expect(atProvider).toMatchObject({ kind: 'secret', secret: 'postgres-database/lab1-guestbook', awaitsInForce: true });
    // a process cannot be told which value: only the agent's file can say
    mesh.register({ name: 'argv-reader', requires: [{ name: 'db', contract: 'postgres-database', provider: 'module' }], resources: { processes: [{ name: 'p', run: ['connect', '--user', '${db.user}'] }] } });
    mesh.assign('argv-reader', 'lab1');
    const refused = composeDeclaration(mesh.state, 'lab1');
    expect(refused.ok).toBe(false);
    expect(refused.ok ? [] : refused.problems).toContainEqual(expect.objectContaining({ what: 'lab1/argv-reader resources.processes.p.run', why: expect.stringContaining('${consumer.secret-tag}') }));
  });

  it('changes the digest when any field of any resource changes — every field in the schema is covered', () => {
    const declaration = composed(foundation(), 'lab1');
    const samples = new Map<string, Resource>();
    for (const resource of declaration.assignments.flatMap((a) => a.resources)) if (!samples.has(resource.kind)) samples.set(resource.kind, resource);
    samples.set('process', { key: 'x/p', module: 'x', kind: 'process', run: ['sleep', '1'], user: null, env: { A: '1' }, envFiles: [{ path: '/e', reason: 'r' }], restartOn: ['x/f'], after: ['x/prepare'] });
    samples.set('bus-identity', { key: 'x/bus-identity', module: 'x', kind: 'bus-identity', path: '/m/.mesh/x/bus-identity.json', owner: null, inbox: '_INBOX.x.n', consumes: ['**'] });
    samples.set('file', { key: 'x/conf', module: 'x', kind: 'file', path: '/m/x/conf', content: 'a=1\n', mode: '0600', awaitsUse: true });
    samples.set('region', { key: 'x/hosts', module: 'x', kind: 'region', path: '/etc/hosts', content: '10.0.0.1 a\n', at: 'end' });
    samples.set('service', { key: 'x/runtime', module: 'x', kind: 'service', unit: 'docker.service', state: 'running', enabled: true, reloadOn: ['x/f'] });
    samples.set('secret', { key: 'x/secret-token', module: 'x', kind: 'secret', secret: 'x/token', path: '/m/.mesh/x/secrets/token', owner: null, vault: { node: 'n', module: 'vault' }, versions: [1, 2], awaitsInForce: true });
    samples.set('trust-anchor', { key: 'x/mesh-root', module: 'x', kind: 'trust-anchor', certificate: '-----BEGIN CERTIFICATE-----\n', fingerprint: `sha256:${'0'.repeat(64)}` });
    const uncovered: string[] = [];
    for (const option of resourceSchema.options) {
      const kind = option.shape.kind.value;
      const sample = samples.get(kind);
      if (!sample) {
        uncovered.push(`${kind} (no sample)`);
        continue;
      }
      for (const field of Object.keys(option.shape)) {
        if (field === 'kind') continue;
        const value = (sample as Record<string, unknown>)[field];
        const changed = { ...sample, [field]: mutate(value) };
        const assignment = { module: 'x', definitionVersion: 1, artifact: null, seats: [] };
        const before = declarationDigest({ node: 'n', assignments: [{ ...assignment, resources: [sample] }] });
        const after = declarationDigest({ node: 'n', assignments: [{ ...assignment, resources: [changed as Resource] }] });
        if (before === after) uncovered.push(`${kind}.${field}`);
      }
    }
    expect(uncovered).toEqual([]);
  });

  it('withholds a region from a node whose agent has not reported the capability, naming it; composes it once it has', () => {
    const mesh = new MeshFixture().node('alpha');
    mesh.register(minimalModule('names', { requires: [{ name: 'identity', contract: 'identity', provider: 'mesh' }], resources: { regions: [{ name: 'hosts', file: '/etc/hosts', template: '127.0.0.1 ${identity.node}.mesh\n' }] } }));
    mesh.assign('names', 'alpha');
    const withheld = composeDeclaration(mesh.state, 'alpha');
    expect(withheld).toMatchObject({ ok: false, problems: [{ what: 'alpha/names names/hosts', why: expect.stringContaining('has not reported the capability "region"') }] });
    evolveMesh(mesh.state, stored('fact.alpha', { type: 'fact.capabilities', data: { node: 'alpha', capabilities: ['region'] } }));
    expect(composed(mesh, 'alpha').assignments[0]?.resources).toEqual([{ key: 'names/hosts', module: 'names', kind: 'region', path: '/etc/hosts', content: '127.0.0.1 alpha.mesh\n', at: 'end' }]);
  });

  describe('a reference with no answer is never sent as text', () => {
    const BUS = { name: 'bus', contract: 'mesh-bus', provider: 'module', seat: 'mesh-broker' };
    const store = (answers?: Record<string, string>) =>
      minimalModule('store', { requires: [BUS, { name: 'who', contract: 'identity', provider: 'mesh' }], provides: [{ provision: 'object-store', fields: { url: { type: 'url' }, bucket: { type: 'string' } }, ...(answers ? { answers } : {}) }] });
    const reader = minimalModule('reader', { requires: [BUS, { name: 'store', contract: 'object-store', provider: 'module' }], resources: { processes: [{ name: 'p', run: ['r', '${store.url}'], env: { BUCKET: '${store.bucket}' } }] } });

    it("holds the node's declaration, naming the reference and the provider, until the provider answers it", () => {
      const mesh = new MeshFixture().node('alpha');
      mesh.registerFixture('local-bus');
      mesh.assign('local-bus', 'alpha', { hold: ['mesh-broker'], values: { 'nats-port': '4222' } });
      mesh.register(store({ url: 'http://${who.address}:9000' }));
      mesh.assign('store', 'alpha');
      mesh.register(reader);
      mesh.assign('reader', 'alpha');
      const held = composeDeclaration(mesh.state, 'alpha');
      expect(held).toEqual({
        ok: false,
        node: 'alpha',
        problems: [expect.objectContaining({ what: 'alpha/reader resources.processes.p.env.BUCKET', why: '${store.bucket} waits for alpha/store, the provider of object-store, to answer bucket: it declares no answer for it' })],
      });
      mesh.register(store({ url: 'http://${who.address}:9000', bucket: '${consumer.name}' }));
      const process = composed(mesh, 'alpha').assignments.find((a) => a.module === 'reader')?.resources.find((r) => r.kind === 'process');
      expect(process).toMatchObject({ run: ['r', 'http://alpha:9000'], env: { BUCKET: 'alpha-reader' } });
    });

    it("reads a host path a container mounts as the path inside it", () => {
      const mesh = new MeshFixture().node('alpha', '/srv');
      mesh.register({ name: 'web', requires: [{ name: 'data', contract: 'directory', provider: 'host' }], resources: { directories: [{ requirement: 'data' }], containers: [{ name: 'app', image: { upstream: 'busybox' }, command: ['serve', '${data}'], env: { DATA: '${data.path}' }, mounts: [{ from: 'data', to: '/var/data' }] }] } });
      mesh.assign('web', 'alpha');
      const container = composed(mesh, 'alpha').assignments[0]?.resources.find((r) => r.kind === 'container');
      expect(container).toMatchObject({ command: ['serve', '/var/data'], env: { DATA: '/var/data' }, mounts: [{ source: '/srv/web/data', target: '/var/data' }] });
    });
  });
});

/** A different value of the same shape. */
const mutate = (value: unknown): unknown => {
  if (value === null) return 'set';
  if (typeof value === 'string') return `${value}x`;
  if (typeof value === 'number') return value + 1;
  if (typeof value === 'boolean') return !value;
  if (Array.isArray(value)) return value.length > 0 ? [mutate(value[0]), ...value.slice(1)] : ['added'];
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    const [first] = entries;
    return first ? { ...(value as object), [first[0]]: mutate(first[1]) } : { added: '1' };
  }
  return value;
};

describe('an env-file', () => {
  it('reads the secret its provider made for this consumer, where the mesh placed it', () => {
    const mesh = foundation();
    mesh.registerFixture('catalogue');
    mesh.assign('catalogue', 'lab1');
    const process = composed(mesh, 'lab1').assignments.find((a) => a.module === 'catalogue')?.resources.find((r) => r.kind === 'process') as Extract<Resource, { kind: 'process' }>;
    expect(process.envFiles).toEqual([{ path: '/srv/mesh/.mesh/catalogue/secrets/db-secret', reason: "the catalogue's database driver reads its DSN only from the environment" }]);
  });
});
