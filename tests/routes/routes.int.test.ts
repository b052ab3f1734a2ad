import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pino } from 'pino';
import { Agent } from '../../src/agent/agent.js';
import { stopRecordedProcesses } from '../../src/agent/left-running.js';
import { meshHome } from '../../src/config.js';
import { sha256Digest } from '../../src/domain/canonical.js';
import { composeDeclaration } from '../../src/domain/declarations/compose.js';
import { emptyMeshState, evolveMesh } from '../../src/domain/mesh/state.js';
import type { StoredMeshEvent } from '../../src/domain/registry.js';
import { answerRequest } from '../../src/domain/routes/answer.js';
import { routesFilePath, type RoutesFile } from '../../src/domain/routes/table.js';
import { FAST } from '../agent/harness.js';
import { refusalMesh } from '../helpers/refusal-mesh.js';
import { fixtureManifest } from '../helpers/given.js';
import { testNatsUrl } from '../helpers/log.js';
import { uniqueName } from '../helpers/names.js';
import { ADMIN_LOGIN, HTTP_PORT, foundationAssignments, handBackAsked, routedModule } from '../helpers/routes.js';
import { providerAnswerSubject } from '../../src/domain/bus/users.js';
import { openTestMesh, waitFor, type TestMesh } from '../helpers/test-mesh.js';
import { enrolAgentNode } from '../helpers/host-keys.js';

// Routes with policy and a module told its own names, against the real servers: every refusal
// through the CLI with its exit code and nothing appended, then a controller and real agents — the
// routes file on the proxy's node, a module's own public URL in what it runs, a domain changed.

const assign = (module: string, node: string, values: Record<string, string> = {}) => ({ type: 'assign' as const, module, node, hold: [], pins: {}, values, placements: {} });

describe('route refusals through the CLI: a clear message, exit 3, nothing appended', () => {
  const { mesh, manifestFile, refused, open, close } = refusalMesh('routes-cli-');

  beforeAll(async () => {
    const t = await open();
    for (const name of ['nats', 'vault', 'route-proxy']) await t.run({ type: 'register-module', manifest: fixtureManifest(name) });
    for (const node of ['edge', 'lab1', 'lab2']) await t.run({ type: 'add-node', node });
    for (const command of foundationAssignments('edge')) await t.run(command);
  });
  afterAll(close);

  it('refuses a policy outside the four, naming the four', async () => {
    const stderr = await refused(['module', 'register', manifestFile(routedModule(uniqueName('web'), { policy: [{ kind: 'ip-allow', from: '10.0.0.0/8' }] }))], 3);
    expect(stderr).toContain('routes.0.policy.0.kind: a route policy is one of four (ADR 0108): authentication, refuse (a refusal on a path), path (path-scoped routing with priority), redirect');
  });

  it.each([
    ['"100000"', '"100000"'],
    ['1.5', '1.5'],
    ['2^53', '9007199254740992'],
  ])('refuses a priority of %s, saying the range and why', async (_, written) => {
    const file = manifestFile(routedModule(uniqueName('web'), { policy: [{ kind: 'path', path: '/x', priority: 0 }] }));
    writeFileSync(file, readFileSync(file, 'utf8').replace('"priority":0', `"priority":${written}`));
    const stderr = await refused(['module', 'register', file], 3);
    expect(stderr).toContain('routes.0.policy.0.priority: a priority is a whole number from -9007199254740991 to 9007199254740991');
  });

  it('refuses a route carrying a credential rather than naming a secret (R108.2)', async () => {
    const stderr = await refused(['module', 'register', manifestFile(routedModule(uniqueName('web'), { policy: [{ kind: 'authentication', secret: 'admin-login', password: 'hunter2' }], requires: [ADMIN_LOGIN] }))], 3);
    expect(stderr).toContain('it carries password: a route names a secret, never holds a credential');
    expect(stderr).not.toContain('unknown field');
  });

  it('refuses an ambiguous pair (same host, same path, same priority)', async () => {
    const stderr = await refused(['module', 'register', manifestFile(routedModule(uniqueName('web'), { policy: [{ kind: 'path', path: '/a', priority: 7 }, { kind: 'refuse', path: '/a', priority: 7 }] }))], 3);
    expect(stderr).toContain('path /a at priority 7 is also routes.0.policy.0 on the same host: the pair is ambiguous');
  });

  it('refuses a route until its node has a public domain, a bad domain, and a second claim on a public name naming its holder', async () => {
    const first = uniqueName('web');
    const second = uniqueName('web');
    await mesh('module', 'register', manifestFile(routedModule(first, { route: 'shop' })));
    await mesh('module', 'register', manifestFile(routedModule(second, { route: 'shop' })));
    expect(await refused(['assign', first, 'lab1'], 3)).toContain('node lab1 has no public domain');
    expect(await refused(['node', 'domain', 'lab1', 'Not A Domain'], 3)).toContain('is not a DNS name in lower case');
    expect((await mesh('node', 'domain', 'lab1', 'shop.example')).code).toBe(0);
    expect((await mesh('node', 'domain', 'lab2', 'shop.example')).code).toBe(0);
    const assigned = await mesh('assign', first, 'lab1');
    expect(assigned.stdout).toContain('public names shop.shop.example');
    expect(await refused(['assign', second, 'lab2'], 3)).toContain(`the public name shop.shop.example is claimed by lab1/${first} (route shop), waiting for the holder of mesh-proxy to hand it back`);
  });

  it('refuses a manifest naming an installation’s literal, naming the module and the key', async () => {
    await mesh('node', 'domain', 'edge', 'edge.example');
    const name = uniqueName('leaky');
    const manifest = routedModule(name, { run: ['server', '--public-url', 'https://id.edge.example/login'] });
    const stderr = await refused(['module', 'register', manifestFile(manifest)], 3);
    expect(stderr).toContain(`${name}'s resources.processes.0.run.2 is "https://id.edge.example/login", which names node edge's public domain edge.example`);
    expect(stderr).toContain('${route:NAME}');
  });
});

describe('routes on real agents: the routes file, a module’s own URL, a domain changed', () => {
  let t: TestMesh;
  let root: string;
  const agents: Agent[] = [];
  const nodes = ['edge', 'lab1'];

  const enrolled = new Set<string>();
  const startAgent = async (node: string): Promise<void> => {
    if (!enrolled.has(node)) await enrolAgentNode(t, node, join(root, 'agents', node));
    enrolled.add(node);
    const agent = new Agent({ node, natsUrl: testNatsUrl(), stateDir: join(root, 'agents', node), controllerKey: t.controllerKey.publicKey, wire: { prefix: t.names.prefix, nodesStream: t.names.nodesStream }, timings: FAST, logger: pino({ level: 'silent' }) });
    await agent.start();
    agents.push(agent);
  };

  const nodeRoot = (node: string): string => join(root, 'nodes', node);
  const routesFileText = (): string | undefined => {
    const path = routesFilePath(nodeRoot('edge'), 'test-proxy');
    return existsSync(path) ? readFileSync(path, 'utf8') : undefined;
  };
  const PROXY = { node: 'edge', module: 'test-proxy' };
  /** As the proxy does: reads what it is asked from its routes file, once it asks for `publicName`, and hands each back on its own subject. */
  const proxyAnswers = async (publicName: string): Promise<void> => {
    const file = await waitFor(`the routes file to ask for ${publicName}`, async () => {
      const text = routesFileText();
      const parsed = text ? (JSON.parse(text) as RoutesFile) : undefined;
      return parsed?.asked.some((a) => a.publicName === publicName) && parsed;
    });
    for (const answer of await handBackAsked(t, PROXY, file.asked)) expect(answer).toMatchObject({ ok: true });
  };
  /** The URL the module's process was started with, as it wrote it down. */
  const urlSeenBy = (module: string): string | undefined => {
    const path = join(nodeRoot('lab1'), module, 'data', 'url');
    return existsSync(path) ? readFileSync(path, 'utf8') : undefined;
  };

  /**
   * A module that writes the public URL it is told into its data directory, then keeps running. It
   * requires the admin login only when a policy authenticates with it: its processes start after its
   * own secrets are placed, and no vault delivers here.
   */
  const tellsItsUrl = (module: string, policy: { kind: string }[]) => ({
    ...routedModule(module, { route: 'forge', policy, requires: [...(policy.some((p) => p.kind === 'authentication') ? [ADMIN_LOGIN] : []), { name: 'data', contract: 'directory', provider: 'host', mode: '0755' }] }),
    resources: {
      directories: [{ requirement: 'data' }],
      processes: [{ name: 'server', run: ['node', '-e', "require('fs').writeFileSync(process.argv[1] + '/url', process.argv[2]); setInterval(() => {}, 1 << 30)", '${data.path}', '${route:forge}'] }],
    },
  });

  beforeEach(async () => {
    root = join(meshHome(), 'tmp', uniqueName('routes-'));
    mkdirSync(root, { recursive: true });
    t = await openTestMesh();
    await t.startController();
    t.startProviderAnswers();
    for (const name of ['nats', 'vault']) await t.run({ type: 'register-module', manifest: fixtureManifest(name) });
    await t.run({ type: 'register-module', manifest: { name: 'test-proxy', provides: [{ provision: 'route' }], canHold: ['mesh-proxy'], resources: { processes: [{ name: 'serve', run: ['node', '-e', 'setInterval(() => {}, 1 << 30)'] }] } } });
    await t.run({ type: 'register-module', manifest: { name: 'plain', requires: [HTTP_PORT(9090)], resources: { processes: [{ name: 'server', run: ['node', '-e', 'setInterval(() => {}, 1 << 30)', '${http-port}'] }] } } });
    await t.run({ type: 'add-node', node: 'core' });
    for (const node of nodes) await t.run({ type: 'add-node', node, root: nodeRoot(node) });
    await t.run({ ...assign('nats', 'core'), hold: ['mesh-broker'] });
    await t.run({ ...assign('vault', 'core'), hold: ['mesh-vault'] });
    await t.run({ ...assign('test-proxy', 'edge'), hold: ['mesh-proxy'] });
    await t.run({ type: 'set-node-domain', node: 'lab1', domain: 'lab.example' });
  });

  afterEach(async () => {
    for (const agent of agents.splice(0)) await agent.stop();
    for (const node of nodes) stopRecordedProcesses(join(root, 'agents', node), 'SIGKILL');
    await t.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('writes the routes file on the proxy’s node with every priority exact, in the order a fresh fold of the log gives byte for byte, and failing closed until the secret is delivered', async () => {
    await startAgent('edge');
    const policy = [
      { kind: 'refuse', path: '/api/internal', priority: 100000 },
      { kind: 'path', path: '/.well-known/acme-challenge', priority: Number.MAX_SAFE_INTEGER },
      { kind: 'path', path: '/low', priority: -Number.MAX_SAFE_INTEGER },
      { kind: 'redirect', from: 'www' },
      { kind: 'authentication', secret: 'admin-login' },
    ];
    await t.run({ type: 'register-module', manifest: tellsItsUrl('forge', policy) });
    await t.run(assign('forge', 'lab1'));
    await proxyAnswers('forge.lab.example');

    const text = await waitFor('the routes file on edge, every name handed back', async () => {
      const now = routesFileText();
      return now !== undefined && (JSON.parse(now) as RoutesFile).entries.length > 0 && (JSON.parse(now) as RoutesFile).asked.length === 0 && now;
    });
    const file = JSON.parse(text) as RoutesFile;
    expect(file.entries.map((e) => [e.host, e.path, e.priority, e.action])).toEqual([
      ['forge.lab.example', '/.well-known/acme-challenge', 9007199254740991, 'forward'],
      ['forge.lab.example', '/api/internal', 100000, 'refuse'],
      ['forge.lab.example', '/', 0, 'forward'],
      ['forge.lab.example', '/low', -9007199254740991, 'forward'],
      ['www.lab.example', '/', 0, 'redirect'],
    ]);
    expect(text).not.toMatch(/password|hash/i);

    // The same log gives the same bytes: a fold of the whole log, composed afresh.
    const state = emptyMeshState();
    for await (const event of t.log.read()) evolveMesh(state, event as StoredMeshEvent);
    const composed = composeDeclaration(state, 'edge');
    if (!composed.ok) throw new Error(JSON.stringify(composed.problems));
    const fresh = composed.declaration.assignments.flatMap((a) => a.resources).find((r) => r.key === 'test-proxy/routes');
    expect(fresh?.kind === 'file' ? fresh.content : undefined).toBe(text);

    // R108.4/R108.5 read from the file on disk: the secret is not delivered (the vault's node runs
    // no agent), so the authenticated route refuses rather than opens; the refusal shadows one path;
    // the redirect answers; once delivered, a request with the credential is let through.
    const secretFile = file.entries.find((e) => e.auth)?.auth?.file ?? '';
    const read = (path: string) => (existsSync(path) ? readFileSync(path, 'utf8') : undefined);
    expect(existsSync(secretFile)).toBe(false);
    expect(answerRequest(file, { host: 'forge.lab.example', path: '/', credentials: 'ada:right' }, read)).toMatchObject({ status: 403, why: expect.stringContaining('not delivered: refused rather than open') });
    expect(answerRequest(file, { host: 'forge.lab.example', path: '/api/internal/write' }, read)).toMatchObject({ status: 403 });
    expect(answerRequest(file, { host: 'www.lab.example', path: '/about' }, read)).toMatchObject({ status: 308, location: 'https://forge.lab.example/about' });
    // As the vault delivers it: sealed to edge, placed where the entry names.
    mkdirSync(dirname(secretFile), { recursive: true });
    writeFileSync(secretFile, 'ada:right\n');
    expect(answerRequest(file, { host: 'forge.lab.example', path: '/' }, read)).toMatchObject({ status: 401 });
    expect(answerRequest(file, { host: 'forge.lab.example', path: '/', credentials: 'ada:right' }, read)).toMatchObject({ status: 'forward', target: { address: 'lab1', port: 8080 } });
    expect(answerRequest(file, { host: 'forge.lab.example', path: '/api/internal' }, read)).toMatchObject({ status: 403 });
  });

  it('tells a module its own public URL, and a domain change re-declares exactly the modules on that node whose values changed', async () => {
    await startAgent('edge');
    await startAgent('lab1');
    await t.run({ type: 'register-module', manifest: tellsItsUrl('forge', []) });
    await t.run(assign('forge', 'lab1'));
    await t.run(assign('plain', 'lab1'));
    // Until the holder of mesh-proxy hands the name back, lab1's declaration waits, saying on what.
    const refusal = await waitFor('lab1 waiting for its public name', async () => {
      const refused = [];
      for await (const event of t.log.read({ aggregate: 'node' })) if (event.type === 'declaration.refused' && (event.data as { node: string }).node === 'lab1') refused.push(event);
      return refused.at(-1);
    });
    expect(JSON.stringify(refusal.data)).toContain('${route:forge} waits for edge/test-proxy, the holder of mesh-proxy, to hand back the public name of route forge (asked: forge.lab.example)');
    expect(urlSeenBy('forge')).toBeUndefined();
    // Nobody else hands it back: a module that does not hold mesh-proxy is refused, appending nothing.
    const head = (await t.jsm.streams.info(t.names.logStream)).state.last_seq;
    const body = { consumer: { node: 'lab1', module: 'forge' }, requirement: 'route:forge', values: { publicName: 'forge.lab.example' } };
    const impostor = (await t.nc.request(providerAnswerSubject(t.names.prefix, 'lab1', 'plain'), JSON.stringify(body), { timeout: 10_000 })).json<{ ok: boolean; refused: { why: string }[] }>();
    expect(impostor).toMatchObject({ ok: false, refused: [{ why: 'the holder of mesh-proxy is edge/test-proxy, and only it hands back a public name' }] });
    expect((await t.jsm.streams.info(t.names.logStream)).state.last_seq).toBe(head);
    await proxyAnswers('forge.lab.example');
    expect(await waitFor('forge told its URL', async () => urlSeenBy('forge'))).toBe('https://forge.lab.example');

    const digests = async (node: string) => new Map((await t.declarationOf(node))?.assignments.map((a) => [a.module, sha256Digest(a)]));
    const before = await waitFor('lab1 declared with both', async () => ((await digests('lab1')).size === 2 ? digests('lab1') : undefined));
    const coreBefore = await t.declarationOf('core');
    const lab1Before = await t.declarationOf('lab1');

    await t.run({ type: 'set-node-domain', node: 'lab1', domain: 'moved.example' });
    await proxyAnswers('forge.moved.example');
    expect(await waitFor('forge told its new URL', async () => urlSeenBy('forge') === 'https://forge.moved.example' && urlSeenBy('forge'))).toBe('https://forge.moved.example');
    await waitFor('the routes file serves the new host', async () => (JSON.parse(routesFileText() ?? '{"entries":[]}') as RoutesFile).entries.some((e) => e.host === 'forge.moved.example'));
    const after = await digests('lab1');
    expect(after.get('forge')).not.toBe(before.get('forge'));
    expect(after.get('plain')).toBe(before.get('plain'));
    expect((await t.declarationOf('lab1'))?.sequence).toBe((lab1Before?.sequence ?? 0) + 1);
    // A node whose modules read nothing of lab1's names is not declared again.
    expect((await t.declarationOf('core'))?.sequence).toBe(coreBefore?.sequence);
  });
});
