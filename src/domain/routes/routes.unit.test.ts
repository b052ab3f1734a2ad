import { describe, expect, it } from '@jest/globals';
import { MeshFixture, eventOf } from '../../../tests/helpers/given.js';
import { ADMIN_LOGIN, ROUTE_FOUNDATION, foundationAssignments, plainModule, routedModule } from '../../../tests/helpers/routes.js';
import { composeDeclaration } from '../declarations/compose.js';
import type { Resource } from '../declarations/declaration.js';
import type { RoutesFile } from './table.js';
import { routesAsked } from './grants.js';

const PROXY = { node: 'edge', module: 'route-proxy' };
const answer = (consumer: { node: string; module: string }, name: string, publicName: string, provider = PROXY) => ({ type: 'answer-consumer' as const, provider, consumer, requirement: `route:${name}`, values: { publicName } });

/** What the proxy does with what it is asked: hands each name back as asked (ADR 0007). */
const handBack = (mesh: MeshFixture): string[] => routesAsked(mesh.state).flatMap((ask) => mesh.run(answer(ask, ask.name, ask.publicName)).map((e) => (e.type === 'route.public-name-granted' ? e.data.publicName : e.type)));

const meshWithProxy = (): MeshFixture => {
  const mesh = new MeshFixture().node('edge').node('lab1');
  for (const manifest of ROUTE_FOUNDATION) mesh.register(manifest);
  for (const command of foundationAssignments('edge')) mesh.run(command);
  mesh.run({ type: 'set-node-domain', node: 'lab1', domain: 'lab.example' });
  return mesh;
};

const resourcesOn = (mesh: MeshFixture, node: string): Map<string, Resource> => {
  const composition = composeDeclaration(mesh.state, node);
  if (!composition.ok) throw new Error(`not composed: ${JSON.stringify(composition.problems)}`);
  return new Map(composition.declaration.assignments.flatMap((a) => a.resources.map((r) => [r.key, r] as const)));
};

const routesFileOn = (mesh: MeshFixture): { text: string; file: RoutesFile } => {
  const resource = resourcesOn(mesh, 'edge').get('route-proxy/routes');
  if (resource?.kind !== 'file') throw new Error('no routes file on the proxy');
  return { text: resource.content, file: JSON.parse(resource.content) as RoutesFile };
};

describe('a route contributed in a manifest (ADR 0108)', () => {
  it('is recorded at registration with its policy, a priority of 100000 and of 2^53 − 1 kept exactly', () => {
    const mesh = meshWithProxy();
    const policy = [
      { kind: 'refuse', path: '/api/internal', priority: 100000 },
      { kind: 'path', path: '/.well-known/acme-challenge', priority: Number.MAX_SAFE_INTEGER },
      { kind: 'redirect', from: 'www' },
      { kind: 'authentication', secret: 'admin-login' },
    ];
    const [registered] = mesh.register(routedModule('forge', { policy, requires: [ADMIN_LOGIN] }));
    const routes = eventOf(registered, 'module.registered').data.manifest.routes;
    expect(routes?.[0]?.policy.map((p) => ('priority' in p ? p.priority : p.kind))).toEqual([100000, Number.MAX_SAFE_INTEGER, 'redirect', 'authentication']);
  });

  it('refuses a policy outside the four, naming the four', () => {
    const problems = meshWithProxy().refusal({ type: 'register-module', manifest: routedModule('forge', { policy: [{ kind: 'ip-allow', from: '10.0.0.0/8' }] }) });
    expect(problems).toEqual([expect.objectContaining({ what: 'routes.0.policy.0.kind', why: expect.stringContaining('authentication, refuse (a refusal on a path), path (path-scoped routing with priority), redirect') })]);
  });

  it.each([
    ['text', '100000', 'written as a number, not text'],
    ['a fraction', 1.5, 'a whole number'],
    ['beyond 2^53 − 1', 2 ** 53, 'a whole number from'],
    ['below −(2^53 − 1)', -(2 ** 53), 'a whole number from'],
  ])('refuses a priority of %s, saying the range and why', (_, priority, why) => {
    const problems = meshWithProxy().refusal({ type: 'register-module', manifest: routedModule('forge', { policy: [{ kind: 'refuse', path: '/x', priority }] }) });
    expect(problems).toEqual([expect.objectContaining({ what: 'routes.0.policy.0.priority', why: expect.stringContaining(why) })]);
    expect(problems[0]?.why).toContain('100000 stays 100000');
  });

  it('refuses a route that carries a credential instead of naming a secret (R108.2), and one naming no secret requirement', () => {
    const mesh = meshWithProxy();
    const carried = mesh.refusal({ type: 'register-module', manifest: routedModule('forge', { policy: [{ kind: 'authentication', secret: 'admin-login', password: 'hunter2' }], requires: [ADMIN_LOGIN] }) });
    expect(carried).toEqual([expect.objectContaining({ what: 'routes.0.policy.0', why: expect.stringContaining('a route names a secret, never holds a credential') })]);
    const hashed = mesh.refusal({ type: 'register-module', manifest: routedModule('forge', { policy: [{ kind: 'authentication', hash: '$2y$05$abc' }] }) });
    expect(hashed.map((p) => p.what)).toEqual(expect.arrayContaining(['routes.0.policy.0']));
    const unnamed = mesh.refusal({ type: 'register-module', manifest: routedModule('forge', { policy: [{ kind: 'authentication', secret: 'nothing' }] }) });
    expect(unnamed).toEqual([expect.objectContaining({ what: 'routes.0.policy.0.secret', why: expect.stringContaining('not a secret requirement') })]);
  });

  it('refuses an ambiguous pair: the same path at the same priority on one host', () => {
    const problems = meshWithProxy().refusal({ type: 'register-module', manifest: routedModule('forge', { policy: [{ kind: 'path', path: '/a', priority: 5 }, { kind: 'refuse', path: '/a', priority: 5 }] }) });
    expect(problems).toEqual([expect.objectContaining({ what: 'routes.0.policy.1', why: expect.stringContaining('path /a at priority 5 is also routes.0.policy.0') })]);
  });
});

describe('public names, handed back by the holder of mesh-proxy', () => {
  it('asks for <route>.<domain> at assignment; the route waits, named, until the holder hands it back; a second claim is refused naming the first', () => {
    const mesh = meshWithProxy().node('lab2');
    mesh.run({ type: 'set-node-domain', node: 'lab2', domain: 'lab.example' });
    mesh.register(routedModule('forge'));
    mesh.register(routedModule('other-forge', { route: 'forge' }));
    const events = mesh.assign('forge', 'lab1');
    expect(events.filter((e) => e.type === 'route.public-name-granted')).toEqual([]);
    expect(routesAsked(mesh.state)).toEqual([{ node: 'lab1', module: 'forge', route: 'forge', name: 'forge', publicName: 'forge.lab.example' }]);
    const waiting = composeDeclaration(mesh.state, 'lab1');
    expect(waiting.ok ? [] : waiting.problems).toEqual([
      expect.objectContaining({ what: 'lab1/forge resources.processes.server.run', why: '${route:forge} waits for edge/route-proxy, the holder of mesh-proxy, to hand back the public name of route forge (asked: forge.lab.example)' }),
    ]);
    expect(mesh.refusal({ type: 'assign', module: 'other-forge', node: 'lab2', hold: [], pins: {}, values: {}, placements: {} })).toEqual([
      expect.objectContaining({ what: 'route forge', why: expect.stringContaining('forge.lab.example is claimed by lab1/forge (route forge), waiting for the holder of mesh-proxy to hand it back') }),
    ]);

    // Only the holder answers, only a name the module asks for, only under the node's domain.
    const forge = { node: 'lab1', module: 'forge' };
    expect(mesh.refusal(answer(forge, 'forge', 'forge.lab.example', { node: 'edge', module: 'vault' }))).toEqual([expect.objectContaining({ why: 'the holder of mesh-proxy is edge/route-proxy, and only it hands back a public name' })]);
    expect(mesh.refusal(answer(forge, 'admin', 'admin.lab.example'))).toEqual([expect.objectContaining({ what: 'route:admin', why: 'forge asks for no public name admin' })]);
    expect(mesh.refusal(answer(forge, 'forge', 'forge.elsewhere.example'))).toEqual([expect.objectContaining({ what: 'publicName', why: expect.stringContaining("is not a DNS name under lab1's public domain lab.example") })]);
    expect(mesh.refusal({ ...answer(forge, 'forge', 'forge.lab.example'), values: { publicName: 'forge.lab.example', port: '1' } })).toEqual([expect.objectContaining({ what: 'port' })]);

    expect(mesh.run(answer(forge, 'forge', 'forge.lab.example')).map((e) => e.data)).toEqual([{ node: 'lab1', module: 'forge', route: 'forge', name: 'forge', publicName: 'forge.lab.example', proxy: PROXY }]);
    expect(mesh.run(answer(forge, 'forge', 'forge.lab.example'))).toEqual([]);
    expect(routesAsked(mesh.state)).toEqual([]);
    expect(composeDeclaration(mesh.state, 'lab1').ok).toBe(true);
    const problems = mesh.refusal({ type: 'assign', module: 'other-forge', node: 'lab2', hold: [], pins: {}, values: {}, placements: {} });
    expect(problems).toEqual([expect.objectContaining({ what: 'route forge', why: expect.stringContaining('forge.lab.example is held by lab1/forge (route forge)') })]);
  });

  it('refuses an assignment while nobody holds mesh-proxy, or its node has no public domain', () => {
    const mesh = new MeshFixture().node('lab1');
    mesh.register(routedModule('forge'));
    const problems = mesh.refusal({ type: 'assign', module: 'forge', node: 'lab1', hold: [], pins: {}, values: {}, placements: {} });
    expect(problems.map((p) => p.why)).toEqual([expect.stringContaining('nobody holds mesh-proxy'), expect.stringContaining('node lab1 has no public domain')]);
  });

  it('refuses a domain that would give a name another assignment holds; under a new one the names are asked for again and handed back', () => {
    const mesh = meshWithProxy().node('lab2');
    mesh.run({ type: 'set-node-domain', node: 'lab2', domain: 'two.example' });
    mesh.register(routedModule('forge'));
    mesh.register(routedModule('other-forge', { route: 'forge' }));
    mesh.assign('forge', 'lab1');
    mesh.assign('other-forge', 'lab2');
    expect(handBack(mesh)).toEqual(['forge.lab.example', 'forge.two.example']);
    expect(mesh.refusal({ type: 'set-node-domain', node: 'lab2', domain: 'lab.example' })).toEqual([expect.objectContaining({ why: expect.stringContaining('held by lab1/forge') })]);
    expect(mesh.run({ type: 'set-node-domain', node: 'lab1', domain: 'one.example' }).map((e) => e.type)).toEqual(['node.public-domain-set']);
    expect(routesAsked(mesh.state).map((a) => a.publicName)).toEqual(['forge.one.example']);
    expect(handBack(mesh)).toEqual(['forge.one.example']);
    // The old name is free again.
    expect(mesh.run({ type: 'set-node-domain', node: 'lab2', domain: 'lab.example' }).map((e) => e.type)).toEqual(['node.public-domain-set']);
    expect(handBack(mesh)).toEqual(['forge.lab.example']);
  });
});

describe('the routes file on the proxy’s node', () => {
  const twoRoutes = (order: 'ab' | 'ba'): MeshFixture => {
    const mesh = meshWithProxy();
    mesh.register(routedModule('forge', { policy: [{ kind: 'refuse', path: '/api/internal', priority: 100000 }, { kind: 'authentication', secret: 'admin-login' }], requires: [ADMIN_LOGIN] }));
    mesh.register(routedModule('site', { policy: [{ kind: 'redirect', from: 'www' }] }));
    for (const module of order === 'ab' ? ['forge', 'site'] : ['site', 'forge']) mesh.assign(module, 'lab1');
    handBack(mesh);
    return mesh;
  };

  it('lists what the proxy is asked until it hands the names back, serving none of them meanwhile', () => {
    const mesh = meshWithProxy();
    mesh.register(routedModule('site', { policy: [{ kind: 'redirect', from: 'www' }] }));
    mesh.assign('site', 'lab1');
    expect(routesFileOn(mesh).file).toEqual({ version: 1, entries: [], asked: [
      { node: 'lab1', module: 'site', route: 'site', name: 'site', publicName: 'site.lab.example' },
      { node: 'lab1', module: 'site', route: 'site', name: 'www', publicName: 'www.lab.example' },
    ] });
    handBack(mesh);
    expect(routesFileOn(mesh).file.asked).toEqual([]);
  });

  it('orders every entry totally, so the same routes give the same bytes whatever order they came in', () => {
    const { text, file } = routesFileOn(twoRoutes('ab'));
    expect(routesFileOn(twoRoutes('ba')).text).toBe(text);
    expect(file.entries.map((e) => [e.host, e.path, e.priority, e.action])).toEqual([
      ['forge.lab.example', '/api/internal', 100000, 'refuse'],
      ['forge.lab.example', '/', 0, 'forward'],
      ['site.lab.example', '/', 0, 'forward'],
      ['www.lab.example', '/', 0, 'redirect'],
    ]);
    expect(file.entries[3]?.redirect).toEqual({ to: 'https://site.lab.example', status: 308 });
    expect(file.entries[1]?.target).toEqual({ address: 'lab1', port: 8080 });
  });

  it('names the authentication secret and where the proxy’s node has it, never a credential; the vault delivers it there', () => {
    const mesh = twoRoutes('ab');
    const { text, file } = routesFileOn(mesh);
    expect(file.entries[1]?.auth).toEqual({ secret: 'lab1-forge/admin-login', file: '/var/lib/mesh/.mesh/route-proxy/route-secrets/lab1-forge.admin-login' });
    expect(text).not.toMatch(/password|hash/);
    expect(resourcesOn(mesh, 'edge').get('route-proxy/route-secret-lab1-forge.admin-login')).toMatchObject({ kind: 'secret', secret: 'lab1-forge/admin-login', vault: { node: 'edge', module: 'vault' } });
  });

  it('refuses (fails closed) on a route whose secret can no longer be named, never forwarding it open', () => {
    const mesh = twoRoutes('ab');
    mesh.run({ type: 'unassign', module: 'vault', node: 'edge' });
    const forge = routesFileOn(mesh).file.entries.filter((e) => e.host === 'forge.lab.example');
    expect(forge.map((e) => e.action)).toEqual(['refuse', 'refuse']);
    expect(forge[1]?.reason).toContain('authentication cannot be checked');
  });
});

describe('a module told its own names (issue 122)', () => {
  it('fills ${route:NAME} with the route’s public URL, and a domain change changes only the modules that read one', () => {
    const mesh = meshWithProxy();
    mesh.register(routedModule('forge', { location: '/git' }));
    mesh.register(plainModule('plain'));
    mesh.assign('forge', 'lab1');
    mesh.assign('plain', 'lab1');
    handBack(mesh);
    const before = resourcesOn(mesh, 'lab1');
    expect(before.get('forge/server')).toMatchObject({ run: ['server', '--public-url', 'https://forge.lab.example/git', '--port', '8080'] });
    mesh.run({ type: 'set-node-domain', node: 'lab1', domain: 'moved.example' });
    const waiting = composeDeclaration(mesh.state, 'lab1');
    expect(waiting.ok ? [] : waiting.problems.map((p) => p.why)).toEqual([expect.stringContaining('(asked: forge.moved.example)')]);
    handBack(mesh);
    const after = resourcesOn(mesh, 'lab1');
    expect(after.get('forge/server')).toMatchObject({ run: ['server', '--public-url', 'https://forge.moved.example/git', '--port', '8080'] });
    expect(after.get('plain/server')).toEqual(before.get('plain/server'));
  });

  it('refuses ${route:NAME} of a route the module does not contribute', () => {
    const problems = meshWithProxy().refusal({ type: 'register-module', manifest: routedModule('forge', { run: ['server', '${route:admin}'] }) });
    expect(problems).toEqual([expect.objectContaining({ what: 'resources.processes.0.run.1', why: expect.stringContaining('${route:admin} names "admin", which is no route of this module') })]);
  });

  it('refuses a manifest naming a node’s public domain, a node as a host, or a routable address, naming the module and key', () => {
    const mesh = meshWithProxy();
    const manifest = plainModule('leaky');
    manifest.resources = { processes: [{ name: 'server', run: ['server', '--port', '${http-port}'], env: { KC_HOSTNAME: 'https://id.lab.example', PEER: 'http://lab1:8080', TRUST: '203.0.114.7', LOCAL: '127.0.0.1', DOC: '192.0.2.1' } }] };
    const problems = mesh.refusal({ type: 'register-module', manifest });
    expect(problems.map((p) => p.what)).toEqual(['resources.processes.0.env.KC_HOSTNAME', 'resources.processes.0.env.PEER', 'resources.processes.0.env.TRUST']);
    expect(problems[0]?.why).toContain("leaky's resources.processes.0.env.KC_HOSTNAME is \"https://id.lab.example\", which names node lab1's public domain lab.example");
    expect(problems[1]?.why).toContain('the name of node lab1, as a host');
    expect(problems[2]?.why).toContain('the routable address 203.0.114.7');
  });
});
