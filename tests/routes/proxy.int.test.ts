import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import type { Subscription } from '@nats-io/nats-core';
import { pino } from 'pino';
import { identityFromSeed } from '../../src/adapters/identity.js';
import { fromBase64 } from '../../src/adapters/key-files.js';
import type { BusIdentity } from '../../src/adapters/nats/connect.js';
import { stopRecordedProcesses } from '../../src/agent/left-running.js';
import { meshHome, projectRoot } from '../../src/config.js';
import { MeshService } from '../../src/controller/mesh-service.js';
import { MeshView } from '../../src/controller/mesh-view.js';
import { SecretKeeper } from '../../src/controller/secret-keeper.js';
import { freePort } from '../../src/dev/ports.js';
import { moduleBusIdentitySchema } from '../../src/domain/bus/module-identity.js';
import { providerAnswerSubject } from '../../src/domain/bus/users.js';
import { routeSecretPath } from '../../src/domain/routes/table.js';
import { runMesh } from '../helpers/cli.js';
import { enforcingBusMesh, type EnforcingBusMesh } from '../helpers/enforcing-bus.js';
import { fixtureManifest } from '../helpers/given.js';
import { uniqueName } from '../helpers/names.js';
import { ADMIN_LOGIN } from '../helpers/routes.js';
import { INSTALLATION_NAMES, waitFor, type TestMesh } from '../helpers/test-mesh.js';

// The proxy the mesh runs (`mesh proxy serve`, the local-proxy fixture), on real agents and a bus
// of the test's own that enforces the user list the control plane composes: the proxy hands back
// every name itself as its own module (no test code answers), a module is told its URL, requests
// through it reach the modules' real processes, a path refuses, a redirect answers, an
// authenticated route fails closed until the vault (local-vault, `mesh vault`) delivers its secret
// to the proxy's node and then opens only to that credential. The mesh here uses the names a real
// installation does (its own server, so they are fresh): the programs the agents run read none of
// a test's.

/** An HTTP server that says what it was told and what it was asked, as JSON. */
const UPSTREAM =
  "const [port, told] = process.argv.slice(1); require('http').createServer((q, s) => { s.setHeader('content-type', 'application/json'); s.end(JSON.stringify({ told, host: q.headers.host, path: q.url, forwardedHost: q.headers['x-forwarded-host'] ?? null, authorization: q.headers.authorization ?? null })); }).listen(Number(port), '127.0.0.1')";

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

describe('the proxy the mesh runs, on real agents and an enforcing bus', () => {
  const dir = join(meshHome(), 'tmp', uniqueName('proxy-'));
  const names = INSTALLATION_NAMES;
  const nodeRoot = (node: string) => join(dir, 'nodes', node);
  const stateOf = (node: string) => join(dir, 'agents', node);
  const identityFileOf = (node: string, module: string) => join(nodeRoot(node), '.mesh', module, 'bus-identity.json');
  let bus: EnforcingBusMesh | undefined;
  let t: TestMesh;
  let ports: { proxy: number; web: number; admin: number };
  let heard: Subscription | undefined;
  const answersSent: string[] = [];
  const children: ChildProcess[] = [];
  const stops: (() => Promise<void>)[] = [];

  const assign = (module: string, node: string, extra: { hold?: string[]; values?: Record<string, string> } = {}) =>
    t.run({ type: 'assign', module, node, hold: extra.hold ?? [], pins: {}, values: extra.values ?? {}, placements: {} });
  const logHead = async () => (await t.jsm.streams.info(names.logStream)).state.last_seq;

  /** A request to the proxy as a browser would send it to `host`. */
  const get = (host: string, path: string, headers: Record<string, string> = {}): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: ports.proxy, path, headers: { host, ...headers } }, (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      });
      req.on('error', reject);
      req.end();
    });
  const basic = (user: string, password: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` });

  /** A module's identity as its node placed it, to speak as that module. */
  const speakingAs = (node: string, module: string): BusIdentity => {
    const identity = moduleBusIdentitySchema.parse(JSON.parse(readFileSync(identityFileOf(node, module), 'utf8')));
    return { key: identityFromSeed(fromBase64(identity.seed)), inbox: identity.inbox };
  };
  const grants = async () => {
    const found: { publicName: string; actor: string }[] = [];
    for await (const event of t.log.read()) if (event.type === 'route.public-name-granted') found.push({ publicName: (event.data as { publicName: string }).publicName, actor: event.actor });
    return found;
  };

  /** What the nodes' processes said and the log's secrets, for a failure to show. */
  const diagnosis = async (): Promise<string> => {
    const said = ['edge', 'lab1'].flatMap((node) => {
      const logs = join(stateOf(node), 'logs');
      return existsSync(logs) ? readdirSync(logs).map((f) => `${node}/${f}: ${readFileSync(join(logs, f), 'utf8').slice(-1500)}`) : [];
    });
    const secrets: string[] = [];
    for await (const event of t.log.read()) if (event.type.startsWith('secret.') || event.type.startsWith('fact.')) secrets.push(`${event.type} ${JSON.stringify(event.data).slice(0, 400)}`);
    return [...said, ...secrets].join('\n');
  };

  beforeAll(async () => {
    bus = await enforcingBusMesh(dir, names);
    t = bus.t;
    ports = { proxy: await freePort(), web: await freePort(), admin: await freePort() };
    t.startProviderAnswers();
    // Every answer the proxy sends, as the controller hears it.
    heard = t.nc.subscribe(providerAnswerSubject(names.prefix, 'edge', 'local-proxy'), { callback: (error, message) => void (error ?? answersSent.push((message.json<{ values: { publicName: string } }>()).values.publicName)) });

    for (const module of ['local-bus', 'local-vault', 'local-proxy']) await t.run({ type: 'register-module', manifest: fixtureManifest(module) });
    const upstream = (module: string, route: string, port: number, extra: { policy: unknown[]; requires?: unknown[] }) => ({
      name: module,
      requires: [{ name: 'http-port', contract: 'port', provider: 'host', port }, ...(extra.requires ?? [])],
      routes: [{ name: route, port: 'http-port', policy: extra.policy }],
      resources: { processes: [{ name: 'server', run: ['node', '-e', UPSTREAM, '${http-port}', `\${route:${route}}`] }] },
    });
    await t.run({ type: 'register-module', manifest: upstream('web', 'web', ports.web, { policy: [{ kind: 'refuse', path: '/private', priority: 10 }, { kind: 'redirect', from: 'www' }] }) });
    await t.run({ type: 'register-module', manifest: upstream('guarded', 'admin', ports.admin, { policy: [{ kind: 'authentication', secret: 'admin-login' }], requires: [ADMIN_LOGIN] }) });
    // A provider on the proxy's node, speaking on the bus as itself: its identity is what an attacker there could point the proxy at.
    await t.run({
      type: 'register-module',
      manifest: {
        name: 'neighbour',
        provides: [{ provision: 'neighbourly' }],
        requires: [{ name: 'bus', contract: 'mesh-bus', provider: 'module', seat: 'mesh-broker' }],
        resources: { processes: [{ name: 'idle', run: ['node', '-e', 'setInterval(() => {}, 1 << 30)'], env: { MESH_BUS_KEY: '${bus.credential}' } }] },
      },
    });
    for (const node of ['edge', 'lab1']) await t.run({ type: 'add-node', node, root: nodeRoot(node), address: '127.0.0.1' });
    await t.run({ type: 'set-node-domain', node: 'lab1', domain: 'lab.example' });
    await assign('local-bus', 'edge', { hold: ['mesh-broker'], values: { 'nats-port': String(bus.server.port) } });
    await assign('local-vault', 'edge', { hold: ['mesh-vault'] });
    await assign('local-proxy', 'edge', { hold: ['mesh-proxy'], values: { 'http-port': String(ports.proxy) } });
    await assign('neighbour', 'edge');
    await assign('web', 'lab1');
    await assign('guarded', 'lab1');
    for (const node of ['edge', 'lab1']) await bus.startAgent(node, stateOf(node));
  }, 60_000);

  afterAll(async () => {
    heard?.unsubscribe();
    for (const child of children) child.kill('SIGKILL');
    for (const stop of stops) await stop();
    await bus?.stopAgents();
    for (const node of ['edge', 'lab1']) stopRecordedProcesses(stateOf(node), 'SIGKILL');
    await bus?.close();
  }, 30_000);

  it('hands back every name it is asked for as its own module, and a request reaches the module’s process, which was told its URL', async () => {
    const answer = await waitFor('web.lab.example answered by its module', async () => {
      const got = await get('web.lab.example', '/hello?x=1').catch(() => undefined);
      return got?.status === 200 && got;
    }, 60_000);
    expect(JSON.parse(answer.body)).toEqual({ told: 'https://web.lab.example', host: 'web.lab.example', path: '/hello?x=1', forwardedHost: 'web.lab.example', authorization: null });
    // Every name the routes asked for was handed back by the proxy's process, as local-proxy on edge.
    const granted = await waitFor('three names handed back', async () => ((await grants()).length >= 3 ? grants() : undefined));
    expect(granted.sort((a, b) => a.publicName.localeCompare(b.publicName))).toEqual([
      { publicName: 'admin.lab.example', actor: 'module:edge/local-proxy' },
      { publicName: 'web.lab.example', actor: 'module:edge/local-proxy' },
      { publicName: 'www.lab.example', actor: 'module:edge/local-proxy' },
    ]);
  }, 90_000);

  it('refuses a path with the reason, however the path is written, redirects, and says when it has no route', async () => {
    for (const path of ['/private', '/private/x', '/a/../private', '//private', '/%70rivate']) {
      const refused = await get('web.lab.example', path);
      expect({ path, status: refused.status, body: refused.body }).toEqual({ path, status: 403, body: 'refused on this path by the route\n' });
    }
    expect((await get('web.lab.example', '/privateer')).status).toBe(200);
    const moved = await get('www.lab.example', '/about?x=1');
    expect({ status: moved.status, location: moved.headers.location }).toEqual({ status: 308, location: 'https://web.lab.example/about?x=1' });
    const none = await get('nosuch.lab.example', '/');
    expect({ status: none.status, body: none.body }).toEqual({ status: 404, body: 'no route for nosuch.lab.example/\n' });
  });

  it('fails an authenticated route closed until the vault delivers its secret to the proxy’s node, then lets only that credential through', async () => {
    const denied = await waitFor('the proxy serving admin.lab.example', async () => {
      const got = await get('admin.lab.example', '/', basic('admin', 'guess')).catch(() => undefined);
      return got?.status === 403 && got;
    }, 60_000);
    expect({ status: denied.status, body: denied.body }).toEqual({ status: 403, body: 'the secret lab1-guarded/admin-login is not delivered: refused rather than open\n' });
    // The controller's secret keeper asks the vault (local-vault, `mesh vault` on edge) to make it;
    // the agents fetch it sealed: the module on lab1, and the proxy's node, which checks it.
    const view = new MeshView(t.newLog(), { logger: pino({ level: 'silent' }) });
    view.start();
    const keeper = new SecretKeeper(t.nc, view, new MeshService(t.newLog(), {}, view), { prefix: names.prefix, controller: t.controllerKey, actor: 'controller', logger: pino({ level: 'silent' }) });
    keeper.start();
    stops.push(async () => {
      await keeper.stop();
      await view.stop();
    });
    const secretFile = routeSecretPath(nodeRoot('edge'), 'local-proxy', 'lab1-guarded/admin-login');
    const secret = await waitFor('the route’s secret on edge', async () => existsSync(secretFile) && readFileSync(secretFile, 'utf8'), 60_000).catch(async (error: Error) => {
      throw new Error(`${error.message}\n${await diagnosis()}`);
    });
    const through = await waitFor('the guarded module answering', async () => {
      const got = await get('admin.lab.example', '/panel', basic('admin', secret));
      return got.status === 200 && got;
    }, 60_000);
    // The credential opened the route at the proxy; the module is not handed it.
    expect(JSON.parse(through.body)).toMatchObject({ told: 'https://admin.lab.example', path: '/panel', authorization: null });
    const wrong = await get('admin.lab.example', '/panel', basic('admin', `${secret}x`));
    expect({ status: wrong.status, challenge: wrong.headers['www-authenticate'] }).toEqual({ status: 401, challenge: 'Basic realm="admin.lab.example", charset="UTF-8"' });
    expect((await get('admin.lab.example', '/panel')).status).toBe(401);
  }, 120_000);

  it('refuses the proxy program pointed at another module’s identity, and the proxy’s identity answering what it was not asked or on another’s subject', async () => {
    const head = await logHead();
    // The program, run by hand on edge with the neighbour's identity and a routes file asking for web's name.
    const routes = join(dir, 'forged-routes.json');
    writeFileSync(routes, JSON.stringify({ version: 1, entries: [], asked: [{ node: 'lab1', module: 'web', route: 'web', name: 'web', publicName: 'web.lab.example' }] }));
    const child = spawn(process.execPath, [join(projectRoot, 'bin', 'mesh.js'), 'proxy', 'serve', '--host', '127.0.0.1', '--port', String(await freePort()), '--routes', routes], {
      cwd: projectRoot,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/', MESH_NATS_URL: bus?.url ?? '', MESH_BUS_KEY: identityFileOf('edge', 'neighbour') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    await waitFor('the forged answer refused', async () => output.includes('was refused'), 30_000).catch(() => {
      throw new Error(`no refusal in the program's output:\n${output}`);
    });
    expect(output).toContain('handing back web.lab.example for lab1/web\'s route web was refused: edge/neighbour: the holder of mesh-proxy is edge/local-proxy, and only it hands back a public name');
    child.kill('SIGTERM');

    // The proxy's own identity: a name the module does not ask for, and one outside its node's domain.
    const asProxy = await (bus as EnforcingBusMesh).connectWhenKnown('as-local-proxy', speakingAs('edge', 'local-proxy'));
    const send = async (subject: string, requirement: string, publicName: string) =>
      (await asProxy.request(subject, JSON.stringify({ consumer: { node: 'lab1', module: 'web' }, requirement, values: { publicName } }), { timeout: 10_000 })).json<{ ok: boolean; refused?: { why: string }[] }>();
    const own = providerAnswerSubject(names.prefix, 'edge', 'local-proxy');
    expect(await send(own, 'route:shop', 'shop.lab.example')).toMatchObject({ ok: false, refused: [{ why: 'web asks for no public name shop' }] });
    expect(await send(own, 'route:web', 'web.elsewhere.example')).toMatchObject({ ok: false, refused: [{ why: '"web.elsewhere.example" is not a DNS name under lab1\'s public domain lab.example' }] });
    // On the neighbour's subject: the server does not let the proxy's identity publish there.
    await expect(send(providerAnswerSubject(names.prefix, 'edge', 'neighbour'), 'route:web', 'web.lab.example')).rejects.toThrow(/Permissions Violation for Publish/);
    // Nothing the refused answers said was recorded.
    const since = [];
    for await (const event of t.log.read({ fromSeq: head + 1 })) since.push(event);
    expect(since.filter((e) => e.type.startsWith('route.') || e.actor === 'module:edge/neighbour')).toEqual([]);
  }, 60_000);

  it('refuses to start without a module’s identity to speak as, or with a port that is none (exit 2, saying why)', async () => {
    const operatorKey = join(dir, 'not-a-module.key');
    writeFileSync(operatorKey, JSON.stringify({ publicKey: 'x', secretKey: 'y' }));
    const [none, notModule, port] = await Promise.all([
      runMesh(['proxy', 'serve', '--port', '18090'], { MESH_BUS_KEY: undefined }),
      runMesh(['proxy', 'serve', '--port', '18090'], { MESH_BUS_KEY: operatorKey }),
      runMesh(['proxy', 'serve', '--port', '80000'], { MESH_BUS_KEY: identityFileOf('edge', 'local-proxy') }),
    ]);
    expect({ code: none.code, stderr: none.stderr }).toEqual({ code: 2, stderr: expect.stringContaining("mesh proxy serve speaks on the bus as the module holding mesh-proxy: set MESH_BUS_KEY to that module's identity file") });
    expect({ code: notModule.code, stderr: notModule.stderr }).toEqual({ code: 2, stderr: expect.stringContaining(`MESH_BUS_KEY names ${operatorKey}, which is not a module's identity file`) });
    expect({ code: port.code, stderr: port.stderr }).toEqual({ code: 2, stderr: expect.stringContaining('--port "80000" is not a port (1 to 65535)') });
  });

  it('sent each name once, however often the routes file was written while it was asked', async () => {
    // (the answers sent by hand above, for names nobody asked, are not the proxy's)
    expect(answersSent.filter((name) => name.endsWith('.lab.example') && name !== 'shop.lab.example').sort()).toEqual(['admin.lab.example', 'web.lab.example', 'www.lab.example']);
    expect((await grants()).length).toBe(3);
  });
});
