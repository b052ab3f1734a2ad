import { describe, expect, it } from '@jest/globals';
import { DEMO_MODULES, FIXTURE_MODULES, MeshFixture, eventOf, fixtureManifest, minimalModule, stored } from '../../../tests/helpers/given.js';
import { evolveMesh } from '../mesh/state.js';
import { manifestSchema } from './manifest.js';
import { meshEventRegistry } from '../registry.js';
import { allSeats } from '../seats/state.js';
import { moduleNamed } from './state.js';
import { decideRegisterModule } from './decider.js';

const whats = (problems: { what: string }[]) => problems.map((p) => p.what);

describe('registering a module', () => {
  it('lists the entrypoints no resource runs, and says a source naming no folder is built from its root; neither is refused', () => {
    const manifest = minimalModule('ingest', {
      source: { url: 'https://example.org/mono.git' },
      entrypoints: [
        { name: 'tools', command: ['ingest', 'tools'] },
        { name: 'provisioner', command: ['ingest', 'provision'] },
        { name: 'migrate', command: ['ingest', 'migrate'] },
      ],
      resources: { processes: [{ name: 'tools', run: ['ingest', 'tools', '--verbose'] }], prepare: { command: ['ingest', 'migrate'], gates: ['tools'] } },
    });
    const decision = decideRegisterModule({ type: 'register-module', manifest }, new MeshFixture().state);
    expect(decision.events).toHaveLength(1);
    expect(decision.summary).toBe(
      'ingest registered as definition version 1; its source names no path, so it is built from the root of https://example.org/mono.git — if it lives in a folder of the repository, register it again with --path; entrypoints no resource runs: provisioner (ingest provision) — run each from a process, container or step, or take it out of entrypoints',
    );
  });

  it('records a definition version, and a new version only when the manifest changes', () => {
    const mesh = new MeshFixture();
    const [first] = mesh.register(minimalModule('echo', { emits: ['said'] }));
    expect(first).toMatchObject({ type: 'module.registered', data: { module: 'echo', definitionVersion: 1 } });
    expect(eventOf(first, 'module.registered').data.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(mesh.register(minimalModule('echo', { emits: ['said'] }))).toEqual([]);
    const [second] = mesh.register(minimalModule('echo', { emits: ['said', 'shouted'] }));
    expect(second).toMatchObject({ data: { definitionVersion: 2 } });
    expect(moduleNamed(mesh.state.catalogue, 'echo')?.definitionVersion).toBe(2);
  });

  it('compares a manifest registered again with the current definition as read today, not with the digest stored with it', () => {
    // Stored by an older control plane, whose digest sorted keys another way (PG_PORT before PGDATA):
    // the stored digest, here a stand-in, is not the one today's code computes for the same manifest.
    const manifest = minimalModule('db', { resources: { processes: [{ name: 'server', run: ['postgres'], env: { PGDATA: '/data', PG_PORT: '5432' } }] } });
    const mesh = new MeshFixture();
    evolveMesh(mesh.state, stored('module.db', { type: 'module.registered', data: { module: 'db', definitionVersion: 1, digest: `sha256:${'0'.repeat(64)}`, manifest: manifestSchema.parse(manifest) } }));
    expect(mesh.register(manifest)).toEqual([]);
    const [next] = mesh.register({ ...manifest, emits: ['started'] });
    expect(next).toMatchObject({ type: 'module.registered', data: { module: 'db', definitionVersion: 2 } });
  });

  it('accepts every manifest in fixtures/, none of which contains a subject or names amqp', () => {
    const mesh = new MeshFixture();
    for (const name of FIXTURE_MODULES) expect(mesh.registerFixture(name)).toHaveLength(1);
    expect(JSON.stringify(FIXTURE_MODULES.map(fixtureManifest))).not.toMatch(/amqp|"mesh\.(mod|seat|log|node|control)\./);
  });

  it('accepts the demo modules, and a provider answers its consumer with its own values filled in', () => {
    const mesh = new MeshFixture();
    for (const name of DEMO_MODULES) expect(mesh.registerFixture(name)).toHaveLength(1);
  });

  it('reads a definition stored before `serves` was renamed `tools` as the current shape, and refuses the old field in a new one', () => {
    const registry = meshEventRegistry();
    const stored = { module: 'old', definitionVersion: 1, digest: `sha256:${'0'.repeat(64)}`, manifest: { name: 'old', serves: ['ping'], tools: ['pong'] } };
    const read = registry.upcast('module.registered', 1, stored, { seq: 1 }).data;
    expect(read).toMatchObject({ manifest: { tools: ['pong', 'ping'] } });
    expect(read).not.toHaveProperty('manifest.serves');
    const [problem] = new MeshFixture().refusal({ type: 'register-module', manifest: minimalModule('old', { serves: ['ping'] }) });
    expect(problem).toMatchObject({ what: 'serves', remedy: expect.stringContaining('write it as tools') });
  });

  it('adds the seats a module declares to the set', () => {
    const mesh = new MeshFixture();
    mesh.registerFixture('telegram-sender');
    const seat = [...allSeats(mesh.state.seats)].find((s) => s.name === 'telegram-sender');
    expect(seat).toMatchObject({ scope: 'mesh', definer: { kind: 'module', module: 'telegram-sender' }, protocol: { accepts: [{ verb: 'send', retain: '7d' }], emits: ['delivered', 'failed'], serves: ['status'] } });
  });

  describe('refuses, naming the field and what to write instead', () => {
    const refused = (manifest: unknown, before: (mesh: MeshFixture) => void = () => undefined) => {
      const mesh = new MeshFixture();
      before(mesh);
      return mesh.refusal({ type: 'register-module', manifest });
    };

    it('an unknown field', () => {
      expect(refused(minimalModule('m', { colour: 'blue' }))).toEqual([expect.objectContaining({ what: 'colour', why: 'unknown field' })]);
      expect(whats(refused(minimalModule('m', { resources: { containers: [{ name: 'c', image: { built: true }, volumes: [] }] } })))).toEqual(['resources.containers.0.volumes']);
    });

    it("a name whose inbox is one of the mesh's own (host, person, enrol, controller, fold-snapshots)", () => {
      for (const name of ['host', 'person', 'enrol', 'controller', 'fold-snapshots']) {
        expect(refused(minimalModule(name))).toEqual([expect.objectContaining({ what: 'name', why: expect.stringContaining(`_INBOX.${name}.`) })]);
      }
      expect(new MeshFixture().register(minimalModule('hosted'))).toHaveLength(1);
    });

    it('a string that is a bus subject', () => {
      const problems = refused(minimalModule('m', { description: 'mesh.mod.gitea.event.pushed' }));
      expect(problems).toEqual([expect.objectContaining({ what: 'description', remedy: expect.stringContaining('the mesh derives the subjects') })]);
    });

    it('a seat named mesh-* or node-*', () => {
      const problems = refused(minimalModule('m', { seats: [{ name: 'mesh-thing', scope: 'mesh' }, { name: 'node-thing', scope: 'node' }] }));
      expect(problems.map((p) => [p.what, p.why.includes('mesh-') || p.why.includes('node-')])).toEqual([
        ['seats.0.name', true],
        ['seats.1.name', true],
      ]);
      expect(problems[0]?.remedy).toContain('"thing"');
    });

    it('a seat another module already declares; the first is untouched', () => {
      const mesh = new MeshFixture();
      mesh.registerFixture('telegram-sender');
      const problems = mesh.refusal({ type: 'register-module', manifest: minimalModule('impostor', { seats: [{ name: 'telegram-sender', scope: 'mesh' }] }) });
      expect(problems).toEqual([expect.objectContaining({ what: 'seats.0.name', why: expect.stringContaining('already declared by module telegram-sender') })]);
      expect([...allSeats(mesh.state.seats)].find((s) => s.name === 'telegram-sender')?.definer).toEqual({ kind: 'module', module: 'telegram-sender' });
      expect(moduleNamed(mesh.state.catalogue, 'impostor')).toBeUndefined();
    });

    it('the old event-name form module.<module>.<verb>', () => {
      const problems = refused(minimalModule('m', { emits: ['module.m.started'], consumes: ['module.gitea.pushed'] }));
      expect(problems.map((p) => [p.what, p.remedy])).toEqual([
        ['emits.0', expect.stringContaining('write "started"')],
        ['consumes.0', expect.stringContaining('write "gitea.pushed"')],
      ]);
    });

    it("'#' in consumes, suggesting '**'", () => {
      expect(refused(minimalModule('m', { consumes: ['gitea.#'] }))).toEqual([expect.objectContaining({ what: 'consumes.0', remedy: expect.stringContaining('write "gitea.**"') })]);
    });

    it('a wildcard in emits', () => {
      expect(whats(refused(minimalModule('m', { emits: ['repository.*'] })))).toEqual(['emits.0']);
    });

    it('emits / consumes / tools / uses / seats without requiring mesh-bus', () => {
      const problems = refused({ name: 'mute', emits: ['a'], consumes: ['x.y'], tools: ['t'], uses: ['mesh-build-machine'], seats: [{ name: 'mute-seat', scope: 'mesh' }] });
      expect(whats(problems)).toEqual(['emits', 'consumes', 'tools', 'uses', 'seats']);
      expect(problems[0]?.remedy).toContain('"contract": "mesh-bus"');
    });

    it('amqp provided or required', () => {
      const problems = refused(minimalModule('m', { provides: [{ provision: 'amqp' }], requires: [{ name: 'bus', contract: 'mesh-bus', provider: 'module', seat: 'mesh-broker' }, { name: 'q', contract: 'amqp', provider: 'module' }] }));
      expect(problems.map((p) => [p.what, p.why.includes('ADR 0131')])).toEqual([
        ['provides.0', true],
        ['requires.1', true],
      ]);
    });

    it('secret provided by a module that cannot hold mesh-vault', () => {
      expect(refused(minimalModule('m', { provides: [{ provision: 'secret' }] }))).toEqual([expect.objectContaining({ what: 'provides', remedy: expect.stringContaining('mesh-vault') })]);
    });

    it('a secret field as a container environment value', () => {
      const manifest = minimalModule('m', {
        requires: [
          { name: 'bus', contract: 'mesh-bus', provider: 'module', seat: 'mesh-broker' },
          { name: 'db', contract: 'postgres-database', provider: 'module' },
          { name: 'token', contract: 'secret', provider: 'module', seat: 'mesh-vault' },
        ],
        resources: { containers: [{ name: 'app', image: { built: true }, env: { DB_HOST: '${db.host}', DB_PASSWORD: '${db.password}', TOKEN: '${token}' } }] },
      });
      const problems = refused(manifest);
      expect(whats(problems)).toEqual(['resources.containers.0.env.DB_PASSWORD', 'resources.containers.0.env.TOKEN']);
      expect(problems[0]?.remedy).toContain('as a file');
    });

    it("but not the bus's credential as an environment value: it is the path of the module's identity file", () => {
      const manifest = minimalModule('m', { resources: { processes: [{ name: 'app', run: ['app'], env: { NATS_IDENTITY: '${bus.credential}' } }] } });
      expect(new MeshFixture().register(manifest).map((e) => e.type)).toEqual(['module.registered']);
    });

    it('a claim on a seat nothing declares, answered with the seats that exist', () => {
      const [problem] = refused(minimalModule('m', { canHold: ['mesh-forge'] }));
      expect(problem).toMatchObject({ what: 'canHold.0', why: 'no seat "mesh-forge" exists' });
      expect(problem?.remedy).toContain('mesh-git');
      expect(problem?.remedy).toContain('node-uplink');
    });

    it('uses naming a seat nobody declares, a requirement naming a seat that delivers nothing, a secret not from mesh-vault', () => {
      const problems = refused(
        minimalModule('m', {
          uses: ['mailer'],
          requires: [
            { name: 'bus', contract: 'mesh-bus', provider: 'module', seat: 'mesh-broker' },
            { name: 'db', contract: 'postgres-database', provider: 'module', seat: 'mesh-store' },
            { name: 'key', contract: 'secret', provider: 'module' },
          ],
        }),
      );
      expect(whats(problems)).toEqual(['uses.0', 'requires.1.seat', 'requires.2']);
    });

    it('a claim on a delivering seat by a module that does not provide what it delivers', () => {
      expect(refused(minimalModule('m', { canHold: ['mesh-git'] }))).toEqual([expect.objectContaining({ what: 'canHold.0', why: expect.stringContaining('delivers git') })]);
    });

    it('a provider kind outside the four', () => {
      expect(whats(refused({ name: 'm', requires: [{ name: 'x', contract: 'y', provider: 'friend' }] }))).toEqual(['requires.0.provider']);
    });

    it('every problem of a manifest at once, schema errors included', () => {
      const problems = refused({ name: 'm', colour: 'blue', emits: ['module.m.x'], seats: [{ name: 'mesh-m', scope: 'mesh' }], canHold: ['nowhere'] });
      expect(whats(problems).sort()).toEqual(['canHold.0', 'colour', 'emits', 'emits.0', 'seats', 'seats.0.name'].sort());
    });
  });

  it('documents every field: the schema parses the fixtures with nothing left over', () => {
    for (const name of FIXTURE_MODULES) expect(manifestSchema.safeParse(fixtureManifest(name)).success).toBe(true);
  });
});
