import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';
import { rmSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { pino } from 'pino';
import type { FastifyInstance } from 'fastify';
import { createOperatorKey, signCommand, signConsoleNonce, type OperatorKey } from '../../src/adapters/operator-keys.js';
import { newIdentity } from '../../src/adapters/identity.js';
import { meshHome } from '../../src/config.js';
import { CommandDispatcher } from '../../src/controller/command-dispatcher.js';
import { buildApp, connectionCounts, type HttpDeps } from '../../src/controller/http/app.js';
import { consoleAccessFromEnv, type ConsoleAccessSettings } from '../../src/controller/http/console-access.js';
import type { SessionSettings } from '../../src/controller/http/console-sessions.js';
import { DEFAULT_HTTP_LIMITS, httpLimitsFromEnv, type HttpLimits } from '../../src/controller/http/limits.js';
import { MeshService } from '../../src/controller/mesh-service.js';
import { MeshView } from '../../src/controller/mesh-view.js';
import { operatorNamed } from '../../src/domain/operators/state.js';
import { probeConsole } from '../../src/dev/probes/console.js';
import { runMesh } from '../helpers/cli.js';
import { unreadConsole } from '../helpers/console.js';
import { uniqueName } from '../helpers/names.js';
import { openTestMesh, waitFor, type TestMesh } from '../helpers/test-mesh.js';

// The console and API under abuse (docs/decisions.md, "The console holds under abuse" and
// "Reading needs a reason"): more idle sockets and fact streams than the bounds, from addresses of
// their own on loopback (127.0.0.0/8 is all loopback on Linux), and /healthz, a read and a command
// still answer; asset names that are properties of every object answer 404; reads need an
// operator's session when required, opened only by a signature the view's key verifies.

/** Small bounds, so a test opens more than them in a moment. */
const LIMITS: HttpLimits = { ...DEFAULT_HTTP_LIMITS, maxConnections: 20, maxConnectionsPerClient: 8, maxStreams: 6, maxStreamsPerClient: 2, idleTimeoutMs: 1_500, keepAliveTimeoutMs: 1_000, headersTimeoutMs: 1_000, requestTimeoutMs: 2_000, bodyLimitBytes: 4_096 };

interface Answer {
  status: number;
  headers: IncomingMessage['headers'];
  text: string;
}

/** A request over a socket of its own (no pool), from `from`; a 200 fact stream is left open and given back. */
const ask = (base: string, path: string, options: { from?: string; method?: string; headers?: Record<string, string>; body?: string; keepOpen?: boolean } = {}): Promise<Answer & { response?: IncomingMessage }> =>
  new Promise((resolve, reject) => {
    const url = new URL(path, base);
    const req = httpRequest({ host: url.hostname, port: url.port, path: `${url.pathname}${url.search}`, method: options.method ?? 'GET', headers: options.headers, agent: false, ...(options.from ? { localAddress: options.from } : {}) }, (response) => {
      if (options.keepOpen && response.statusCode === 200) {
        response.once('data', () => resolve({ status: 200, headers: response.headers, text: '', response }));
        return;
      }
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString()));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, text }));
    });
    req.on('error', reject);
    req.end(options.body);
  });

/** A socket that connects and says nothing, from `from`; `closed` settles when the server ends it. */
const idleSocket = (port: number, from: string): Promise<{ socket: Socket; closed: Promise<void> }> =>
  new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, localAddress: from });
    const closed = new Promise<void>((settle) => socket.once('close', () => settle()));
    socket.on('error', () => undefined);
    // Read what comes (a 408, the end): a paused socket never sees its end, nor closes.
    socket.resume();
    socket.once('connect', () => resolve({ socket, closed }));
    socket.once('close', () => resolve({ socket, closed }));
  });

/** `promise`, or a failure naming what did not happen in 20 s (a bound on a hang, not a speed asserted). */
const within = <T>(promise: Promise<T>, what: string): Promise<T> =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not so after 20 s: ${what}`)), 20_000);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });

describe('the console and API under abuse', () => {
  let t: TestMesh;
  let view: MeshView;
  let ada: OperatorKey;
  let bob: OperatorKey;
  const apps: FastifyInstance[] = [];
  const sockets: Socket[] = [];
  const streams: IncomingMessage[] = [];
  const dir = join(meshHome(), 'tmp', uniqueName('console-abuse-'));

  beforeAll(async () => {
    t = await openTestMesh();
    ada = createOperatorKey(join(dir, 'ada.key'), 'ada');
    bob = createOperatorKey(join(dir, 'bob.key'), 'bob');
    await t.run({ type: 'add-operator', operator: 'ada', publicKey: ada.publicKey });
    await t.run({ type: 'add-operator', operator: 'bob', publicKey: bob.publicKey });
    await t.run({ type: 'revoke-operator', operator: 'bob' });
    view = new MeshView(t.newLog(), { logger: pino({ level: 'silent' }) });
    view.start();
    await view.whenCaughtUp();
  });
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.destroy();
    for (const stream of streams.splice(0)) stream.destroy();
    for (const app of apps.splice(0)) await app.close();
  });
  afterAll(async () => {
    await view.stop();
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** An app on `host`, its reads a fixed overview, its commands decided on the test mesh, its operators the view's. */
  const start = async (options: { host?: string; auth?: ConsoleAccessSettings['auth']; sessions?: Partial<SessionSettings> } = {}): Promise<{ app: FastifyInstance; base: string; port: number }> => {
    const deps: HttpDeps = {
      console: unreadConsole,
      overview: async () => ({ healthy: true, problems: [], nodes: [], seats: [], unknown: [] }) as unknown as Awaited<ReturnType<HttpDeps['overview']>>,
      onFact: () => () => undefined,
      recentFacts: () => [],
      dispatcher: new CommandDispatcher(new MeshService(t.newLog())),
      logger: pino({ level: 'silent' }),
      metrics: { contentType: 'text/plain', text: async () => 'mesh_nodes 0\n' },
      limits: LIMITS,
      access: { settings: { auth: options.auth ?? 'open', sessionTtlMs: 60_000 }, operators: (name) => operatorNamed(view.mesh().operators, name), ...(options.sessions ? { sessions: options.sessions } : {}) },
    };
    const app = buildApp(deps);
    apps.push(app);
    await app.listen({ host: options.host ?? '127.0.0.1', port: 0 });
    const port = (app.server.address() as { port: number }).port;
    return { app, base: `http://127.0.0.1:${port}`, port };
  };

  const command = (key: OperatorKey) => JSON.stringify(signCommand(key, uniqueName('c'), { type: 'add-node', node: uniqueName('n-') }, new Date()));

  it('answers /healthz, a read and a command while more idle sockets and fact streams are open than its bounds', async () => {
    const { app, base, port } = await start();
    // Fact streams: two from each address at most, six in all.
    const opened: Answer[] = [];
    for (const from of ['127.0.0.2', '127.0.0.2', '127.0.0.2', '127.0.0.3', '127.0.0.3', '127.0.0.4', '127.0.0.4', '127.0.0.5']) {
      const answer = await ask(base, '/api/facts/stream', { from, keepOpen: true });
      if (answer.response) streams.push(answer.response);
      opened.push(answer);
    }
    expect(opened.map((a) => a.status)).toEqual([200, 200, 503, 200, 200, 200, 200, 503]);
    expect(opened[2]?.headers['retry-after']).toBe('30');
    expect(JSON.parse(opened[2]?.text ?? '{}')).toMatchObject({ ok: false, refused: [{ what: 'GET /api/facts/stream', why: '2 fact streams are open from 127.0.0.2, and one address may hold 2 at once' }] });
    expect(JSON.parse(opened[7]?.text ?? '{}')).toMatchObject({ refused: [{ why: '6 fact streams are open, as many as this controller holds at once (6)' }] });

    // Idle sockets: twelve from each of three addresses, over each one's bound (8) and over all (20).
    for (const from of ['127.0.0.6', '127.0.0.7', '127.0.0.8']) for (let i = 0; i < 12; i += 1) sockets.push((await idleSocket(port, from)).socket);
    // Past each address's bound and past the bound in all, idle sockets gave way to newcomers.
    const counts = await waitFor('the floods counted', async () => {
      const c = connectionCounts(app);
      return c && c.evicted >= 3 * (12 - LIMITS.maxConnectionsPerClient) ? c : undefined;
    });
    expect(counts.total).toBeLessThanOrEqual(LIMITS.maxConnections);
    for (const [address, open] of counts.byClient) expect({ address, open: Math.min(open, LIMITS.maxConnectionsPerClient) }).toEqual({ address, open });

    // The operator, from an address of their own, is still answered; so is a request from a flooding address.
    expect((await ask(base, '/healthz')).status).toBe(200);
    expect((await ask(base, '/healthz', { from: '127.0.0.6' })).status).toBe(200);
    expect((await ask(base, '/api/overview')).status).toBe(200);
    const carried = await ask(base, '/api/tools/add-node', { method: 'POST', body: command(ada), headers: { 'content-type': 'application/json' } });
    expect({ status: carried.status, ok: (JSON.parse(carried.text) as { ok: boolean }).ok }).toEqual({ status: 200, ok: true });
    // A stream given back makes room for one more from that address.
    streams.shift()?.destroy();
    await waitFor('a stream slot freed', async () => {
      const again = await ask(base, '/api/facts/stream', { from: '127.0.0.2', keepOpen: true });
      if (again.response) streams.push(again.response);
      return again.status === 200;
    });
  });

  it('closes a socket that says nothing, and one whose headers never end, and refuses a body over the limit', async () => {
    const { base, port } = await start();
    const silent = await idleSocket(port, '127.0.0.9');
    sockets.push(silent.socket);
    // Slowloris: a header line every 300 ms keeps the socket from being silent, and its headers never end.
    const slow = await idleSocket(port, '127.0.0.9');
    sockets.push(slow.socket);
    slow.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
    const trickle = setInterval(() => slow.socket.write('X-Slow: 1\r\n'), 300);
    try {
      await within(silent.closed, 'the silent socket closed');
      await within(slow.closed, 'the slow socket closed');
    } finally {
      clearInterval(trickle);
    }
    const large = await ask(base, '/api/tools/add-node', { method: 'POST', body: JSON.stringify({ padding: 'x'.repeat(LIMITS.bodyLimitBytes) }), headers: { 'content-type': 'application/json' } });
    expect(large.status).toBe(413);
    expect(JSON.parse(large.text)).toMatchObject({ ok: false, error: { code: 'validation', field: 'body' } });
  });

  it('answers 404, never 500, for any asset name it does not have', async () => {
    const { base } = await start();
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf', '%2e%2e%2fx', '..%2f..%2fpackage.json', '%00', 'console.css%00']) {
      expect({ name, status: (await fetch(`${base}/assets/${name}`)).status }).toEqual({ name, status: 404 });
    }
    expect((await fetch(`${base}/assets/console.css`)).status).toBe(200);
    const served = new Set(['console.css', 'console.js', 'favicon.svg', 'htmx.min.js']);
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.string({ minLength: 1 }), fc.constantFrom(...Object.getOwnPropertyNames(Object.prototype))), async (name) => {
        const status = (await fetch(`${base}/assets/${encodeURIComponent(name)}`)).status;
        expect(status).toBe(served.has(name) ? 200 : 404);
      }),
      { numRuns: 150 },
    );
  });

  /** A session opened as `key` signs, claiming to be `as`: the answer. */
  const openSession = async (base: string, key: Pick<OperatorKey, 'secretKey'>, as: string, nonce?: string): Promise<{ status: number; body: { ok: boolean; token?: string; open?: string; refused?: { why: string }[] }; nonce: string }> => {
    const given = nonce ?? ((await (await fetch(`${base}/api/session/challenge`)).json()) as { nonce: string }).nonce;
    const response = await fetch(`${base}/api/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ operator: as, nonce: given, signature: signConsoleNonce({ operator: as, publicKey: '', secretKey: key.secretKey }, given) }) });
    return { status: response.status, body: (await response.json()) as { ok: boolean; token?: string; open?: string }, nonce: given };
  };

  it('answers reads only to an operator who signed a nonce, when MESH_CONSOLE_AUTH=required on loopback', async () => {
    const { base } = await start({ auth: 'required' });
    for (const path of ['/api/overview', '/api/facts/stream']) {
      const refused = await fetch(`${base}${path}`);
      expect(refused.status).toBe(401);
      expect(refused.headers.get('www-authenticate')).toBe('Bearer realm="mesh console"');
      expect(await refused.json()).toMatchObject({ ok: false, refused: [{ why: expect.stringContaining('carries no session'), remedy: expect.stringContaining('mesh console open') }], error: { code: 'unauthenticated' } });
    }
    const page = await fetch(`${base}/`);
    expect(page.status).toBe(401);
    expect(await page.text()).toContain('mesh console open');
    // Open on loopback: liveness, readiness, metrics, the schema, the assets.
    for (const path of ['/healthz', '/readyz', '/metrics', '/api/openapi.json', '/assets/console.css']) expect({ path, status: (await fetch(`${base}${path}`)).status }).toEqual({ path, status: 200 });

    const opened = await openSession(base, ada, 'ada');
    expect(opened.status).toBe(201);
    const bearer = { authorization: `Bearer ${opened.body.token ?? ''}` };
    expect((await fetch(`${base}/api/overview`, { headers: bearer })).status).toBe(200);
    // The one-time address leaves the session in a cookie (HttpOnly, SameSite=Strict) and leads to the overview.
    const link = await fetch(`${base}${opened.body.open ?? ''}`, { redirect: 'manual' });
    expect(link.status).toBe(303);
    expect(link.headers.get('location')).toBe('/');
    const cookie = link.headers.get('set-cookie') ?? '';
    expect(cookie).toMatch(/^mesh_console_session=[A-Za-z0-9_-]+; Path=\/; HttpOnly; SameSite=Strict; Max-Age=\d+$/);
    expect((await fetch(`${base}/api/overview`, { headers: { cookie: cookie.split(';')[0] ?? '' } })).status).toBe(200);
    expect((await fetch(`${base}${opened.body.open ?? ''}`, { redirect: 'manual' })).status).toBe(401);
  });

  it('refuses a wrong key, a revoked operator, a replayed nonce, a command signature, and a session whose operator is revoked since', async () => {
    const { base } = await start({ auth: 'required' });
    const wrongKey = await openSession(base, newIdentity(), 'ada');
    expect(wrongKey).toMatchObject({ status: 401, body: { ok: false, refused: [{ why: "the signature does not verify against operator ada's key as the mesh holds it" }] } });
    const revoked = await openSession(base, bob, 'bob');
    expect(revoked).toMatchObject({ status: 401, body: { refused: [{ why: 'operator bob was revoked' }] } });
    const stranger = await openSession(base, newIdentity(), 'mallory');
    expect(stranger).toMatchObject({ status: 401, body: { refused: [{ why: 'no operator mallory is known to the mesh' }] } });
    // A nonce is spent by the first attempt, good or bad.
    const first = await openSession(base, ada, 'ada');
    expect(first.status).toBe(201);
    const replayed = await openSession(base, ada, 'ada', first.nonce);
    expect(replayed).toMatchObject({ status: 401, body: { refused: [{ why: expect.stringContaining('used already') }] } });
    expect((await openSession(base, ada, 'ada', wrongKey.nonce)).status).toBe(401);
    // A command's signature is over other bytes: it never opens a session.
    const nonce = ((await (await fetch(`${base}/api/session/challenge`)).json()) as { nonce: string }).nonce;
    const signedCommand = signCommand(ada, nonce, { type: 'add-node', node: 'x' }, new Date());
    const asSession = await fetch(`${base}/api/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ operator: 'ada', nonce, signature: signedCommand.signature }) });
    expect(asSession.status).toBe(401);
    const badBody = await fetch(`${base}/api/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ operator: 'ada', nonce: 'short', signature: 'x', extra: 1 }) });
    expect(badBody.status).toBe(400);

    // carol's session ends when carol is revoked.
    const carol = createOperatorKey(join(dir, uniqueName('carol-'), 'carol.key'), uniqueName('carol-'));
    await t.run({ type: 'add-operator', operator: carol.operator, publicKey: carol.publicKey });
    await view.whenCaughtUp();
    await waitFor('carol known to the view', async () => operatorNamed(view.mesh().operators, carol.operator) !== undefined);
    const carols = await openSession(base, carol, carol.operator);
    expect(carols.status).toBe(201);
    const bearer = { authorization: `Bearer ${carols.body.token ?? ''}` };
    expect((await fetch(`${base}/api/overview`, { headers: bearer })).status).toBe(200);
    await t.run({ type: 'revoke-operator', operator: carol.operator });
    const after = await waitFor('the session refused', async () => {
      const r = await fetch(`${base}/api/overview`, { headers: bearer });
      return r.status === 401 ? r : undefined;
    });
    expect(await after.json()).toMatchObject({ refused: [{ why: `operator ${carol.operator} was revoked since the session was opened` }] });
  });

  it('refuses an expired nonce and an expired session', async () => {
    const { base } = await start({ auth: 'required', sessions: { sessionTtlMs: 1_000, nonceTtlMs: 1_000 } });
    const opened = await openSession(base, ada, 'ada');
    const stale = ((await (await fetch(`${base}/api/session/challenge`)).json()) as { nonce: string }).nonce;
    const bearer = { authorization: `Bearer ${opened.body.token ?? ''}` };
    expect((await fetch(`${base}/api/overview`, { headers: bearer })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1_200));
    const expired = await fetch(`${base}/api/overview`, { headers: bearer });
    expect(expired.status).toBe(401);
    expect(await expired.json()).toMatchObject({ refused: [{ why: expect.stringContaining('or it expired') }] });
    expect((await openSession(base, ada, 'ada', stale)).body).toMatchObject({ refused: [{ why: expect.stringContaining('or it expired') }] });
  });

  it("refuses every attack of the console's security probe", async () => {
    const { base } = await start({ auth: 'required' });
    const outcomes = await probeConsole({ consoleUrl: base, operator: { name: 'ada', key: ada }, idleSockets: 40, streams: 12 });
    expect(outcomes.length).toBeGreaterThanOrEqual(12);
    expect(outcomes.filter((o) => !o.refused)).toEqual([]);
    expect(outcomes.map((o) => o.attack)).toEqual(expect.arrayContaining(['GET /assets/constructor', 'GET /api/overview with no session', "ada's session request replayed"]));
    // Open on loopback, the demo's default: the unauthenticated read is said to be untried, not refused.
    const demo = await start();
    const open = await probeConsole({ consoleUrl: demo.base, idleSockets: 40, streams: 12 });
    expect(open.find((o) => o.attack === 'GET /api/overview with no session')).toMatchObject({ refused: false, untried: true });
  });

  it('mesh console open signs a nonce and prints an address good once; a revoked key is refused (3), a console away is unavailable (6)', async () => {
    const { base } = await start({ auth: 'required' });
    const opened = await runMesh(['console', 'open', '--url', base, '--json'], { MESH_OPERATOR_KEY: join(dir, 'ada.key') });
    expect({ code: opened.code, stderr: opened.stderr }).toEqual({ code: 0, stderr: '' });
    const answer = JSON.parse(opened.stdout) as { ok: boolean; operator: string; url: string; token: string };
    expect(answer).toMatchObject({ ok: true, operator: 'ada', url: expect.stringMatching(new RegExp(`^${base}/session/[A-Za-z0-9_-]{43}$`)) });
    const link = await fetch(answer.url, { redirect: 'manual' });
    expect(link.status).toBe(303);
    expect((await fetch(`${base}/api/overview`, { headers: { cookie: (link.headers.get('set-cookie') ?? '').split(';')[0] ?? '' } })).status).toBe(200);
    expect((await fetch(`${base}/api/overview`, { headers: { authorization: `Bearer ${answer.token}` } })).status).toBe(200);

    const words = await runMesh(['console', 'open'], { MESH_OPERATOR_KEY: join(dir, 'ada.key'), MESH_CONSOLE_URL: base });
    expect(words.code).toBe(0);
    expect(words.stdout).toMatch(new RegExp(`^${base}/session/\\S+\n$`));
    const revoked = await runMesh(['console', 'open', '--url', base], { MESH_OPERATOR_KEY: join(dir, 'bob.key') });
    expect({ code: revoked.code, stderr: revoked.stderr }).toEqual({ code: 3, stderr: expect.stringContaining('operator bob was revoked') });
    const away = await runMesh(['console', 'open', '--url', 'http://127.0.0.1:1', '--json'], { MESH_OPERATOR_KEY: join(dir, 'ada.key') });
    expect(away.code).toBe(6);
    expect(JSON.parse(away.stdout)).toMatchObject({ ok: false, error: { code: 'unavailable' } });
    expect((await runMesh(['console', 'open', '--url', 'not a url'], { MESH_OPERATOR_KEY: join(dir, 'ada.key') })).code).toBe(2);
  });

  it('beyond loopback needs a session whatever the setting says, and on loopback is open by default', async () => {
    const wide = await start({ host: '0.0.0.0', auth: 'open' });
    for (const path of ['/api/overview', '/', '/metrics', '/api/facts/stream']) expect({ path, status: (await fetch(`${wide.base}${path}`)).status }).toEqual({ path, status: 401 });
    expect((await fetch(`${wide.base}/healthz`)).status).toBe(200);
    const opened = await openSession(wide.base, ada, 'ada');
    expect((await fetch(`${wide.base}/api/overview`, { headers: { authorization: `Bearer ${opened.body.token ?? ''}` } })).status).toBe(200);

    // On an address of the machine's own that is not loopback, the same (when the machine has one).
    const outside = Object.values(networkInterfaces())
      .flat()
      .find((i) => i?.family === 'IPv4' && !i.internal)?.address;
    if (outside) {
      const there = await start({ host: outside, auth: 'open' });
      const port = (there.app.server.address() as { port: number }).port;
      expect((await fetch(`http://${outside}:${port}/api/overview`)).status).toBe(401);
      expect((await fetch(`http://${outside}:${port}/metrics`)).status).toBe(401);
    }

    const narrow = await start({ auth: 'open' });
    expect((await fetch(`${narrow.base}/api/overview`)).status).toBe(200);
    // There is no setting that turns it off: open and required are all there is.
    expect(() => consoleAccessFromEnv({ MESH_CONSOLE_AUTH: 'off' })).toThrow(/neither open nor required/);
    expect(consoleAccessFromEnv({})).toEqual({ auth: 'open', sessionTtlMs: 8 * 3_600_000 });
    expect(() => httpLimitsFromEnv({ MESH_HTTP_MAX_CONNECTIONS: '-1' })).toThrow(/MESH_HTTP_MAX_CONNECTIONS/);
    expect(() => httpLimitsFromEnv({ MESH_HTTP_MAX_STREAMS: '5000' })).toThrow(/would leave no connection/);
  });
});
