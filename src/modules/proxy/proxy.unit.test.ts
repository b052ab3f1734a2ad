import { afterAll, describe, expect, it } from '@jest/globals';
import { pino } from 'pino';
import { MeshFixture } from '../../../tests/helpers/given.js';
import { ADMIN_LOGIN, ROUTE_FOUNDATION, foundationAssignments, routedModule } from '../../../tests/helpers/routes.js';
import { credentialMatches } from '../../domain/routes/answer.js';
import type { Ask } from '../../domain/routes/grants.js';
import { wantedSecrets } from '../../domain/secrets/wanted.js';
import { HandBack, type HandBackAnswer } from './hand-back.js';
import { normalisedPath, proxyServer } from './http.js';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RoutesFile } from '../../domain/routes/table.js';

// The proxy's own rules, with no server: which credential opens a route, which path a request is
// decided on, that each ask is handed back once, and that a route's secret goes to the proxy's node.

const ask = (name: string, publicName = `${name}.lab.example`): Ask => ({ node: 'lab1', module: 'web', route: name, name, publicName });
const settle = () => new Promise((resolve) => setTimeout(resolve, 5));

describe('the credential a route’s secret holds', () => {
  it('is the pair when the secret is `user:password`, the password under any user when it has no `:`', () => {
    expect(credentialMatches('ada:right', 'ada:right')).toBe(true);
    expect(credentialMatches('bob:right', 'ada:right')).toBe(false);
    expect(credentialMatches('ada:wrong', 'ada:right')).toBe(false);
    expect(credentialMatches('anyone:s3cr3t-value', 's3cr3t-value')).toBe(true);
    expect(credentialMatches('s3cr3t-value', 's3cr3t-value')).toBe(true);
    expect(credentialMatches('anyone:s3cr3t-valuf', 's3cr3t-value')).toBe(false);
    expect(credentialMatches(undefined, 's3cr3t-value')).toBe(false);
    expect(credentialMatches('é:é', 'ab:c')).toBe(false);
  });
});

describe('the path a request is decided on', () => {
  it.each([
    ['/api/internal', '/api/internal'],
    ['/a/../api/internal', '/api/internal'],
    ['//api//internal', '/api/internal'],
    ['/api/%69nternal', '/api/internal'],
    ['/api%2Finternal', '/api/internal'],
    ['/./api/internal/x?y=1', '/api/internal/x'],
  ])('%s is decided as %s', (url, decided) => {
    expect(normalisedPath(url)?.decided).toBe(decided);
  });

  it('keeps the query and the escapes for the upstream, and refuses what cannot be read', () => {
    expect(normalisedPath('/a%20b?x=1')).toEqual({ decided: '/a b', pathname: '/a%20b', search: '?x=1' });
    expect(normalisedPath('/%E0%A4%A')).toBeUndefined();
  });
});

describe('handing back what the routes file asks for', () => {
  const logger = pino({ level: 'silent' });

  it('answers each ask once while it is listed, and again once it has left the file and come back', async () => {
    const sent: string[] = [];
    const handBack = new HandBack(async (a): Promise<HandBackAnswer> => (sent.push(a.publicName), { ok: true, summary: 'granted' }), logger);
    handBack.asked([ask('web'), ask('www')]);
    handBack.asked([ask('web'), ask('www')]);
    await settle();
    handBack.asked([ask('web'), ask('www')]);
    handBack.asked([ask('www')]);
    await settle();
    expect(sent.sort()).toEqual(['web.lab.example', 'www.lab.example']);
    expect(handBack.outstanding()).toBe(0);
    handBack.asked([]);
    handBack.asked([ask('web')]);
    await settle();
    expect(sent.filter((n) => n === 'web.lab.example')).toHaveLength(2);
    handBack.stop();
  });

  it('tries an answer the bus did not take again, backing off, and a refused one only after the longest wait', async () => {
    let now = 0;
    const sent: string[] = [];
    const answers: (HandBackAnswer | Error)[] = [new Error('no responders'), { ok: false, refused: [{ what: 'x', why: 'not the holder', remedy: 'r' }] }, { ok: true, summary: 'granted' }];
    const handBack = new HandBack(
      async (a) => {
        sent.push(a.publicName);
        const next = answers.shift();
        if (next instanceof Error) throw next;
        return next ?? { ok: true, summary: 'granted' };
      },
      logger,
      { retryMs: 1_000, retryMaxMs: 30_000 },
      () => now,
    );
    handBack.asked([ask('web')]);
    await settle();
    handBack.asked([ask('web')]);
    expect(sent).toHaveLength(1);
    now = 1_000;
    handBack.asked([ask('web')]);
    await settle();
    expect(sent).toHaveLength(2);
    now = 29_000;
    handBack.asked([ask('web')]);
    expect(sent).toHaveLength(2);
    now = 31_000;
    handBack.asked([ask('web')]);
    await settle();
    expect(sent).toHaveLength(3);
    expect(handBack.outstanding()).toBe(0);
    handBack.stop();
  });
});

describe('a route’s secret', () => {
  it('goes to the node of mesh-proxy’s holder as well as the module’s, which checks it, and follows the seat', () => {
    const mesh = new MeshFixture().node('edge').node('lab1');
    for (const manifest of ROUTE_FOUNDATION) mesh.register(manifest);
    for (const command of foundationAssignments('edge')) mesh.run(command);
    mesh.run({ type: 'set-node-domain', node: 'lab1', domain: 'lab.example' });
    mesh.register(routedModule('forge', { policy: [{ kind: 'authentication', secret: 'admin-login' }], requires: [ADMIN_LOGIN] }));
    mesh.register({ ...routedModule('plain', { requires: [ADMIN_LOGIN] }) });
    mesh.run({ type: 'assign', module: 'forge', node: 'lab1', hold: [], pins: {}, values: {}, placements: {} });
    mesh.run({ type: 'assign', module: 'plain', node: 'lab1', hold: [], pins: {}, values: {}, placements: {} });
    const wanted = wantedSecrets(mesh.state);
    expect(wanted.get('lab1-forge/admin-login')?.recipients).toEqual(['edge', 'lab1']);
    // a secret no route checks stays with its module
    expect(wanted.get('lab1-plain/admin-login')?.recipients).toEqual(['lab1']);
    // mesh-proxy handed over to a proxy on another node: the secret goes there instead
    mesh.node('edge2');
    mesh.run({ type: 'assign', module: 'route-proxy', node: 'edge2', hold: [], pins: {}, values: { 'acme-email': 'ops@mesh.invalid' }, placements: {} });
    mesh.run({ type: 'hand-over-seat', seat: 'mesh-proxy', to: { node: 'edge2', module: 'route-proxy' }, expectedHolder: { node: 'edge', module: 'route-proxy' } });
    expect(wantedSecrets(mesh.state).get('lab1-forge/admin-login')?.recipients).toEqual(['edge2', 'lab1']);
  });
});

describe('the proxy’s HTTP side, with a real upstream on loopback', () => {
  const servers: Server[] = [];
  const listening = async (server: Server): Promise<number> => {
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return (server.address() as AddressInfo).port;
  };
  const send = (port: number, options: { host: string; path: string; method?: string; headers?: Record<string, string>; body?: string }) =>
    new Promise<{ status: number; headers: Record<string, unknown>; body: string }>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: options.path, method: options.method ?? 'GET', headers: { host: options.host, ...options.headers } }, (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      });
      req.on('error', reject);
      req.end(options.body);
    });
  const entry = (port: number) => ({ host: 'web.lab.example', path: '/', priority: 0, action: 'forward' as const, target: { address: '127.0.0.1', port }, redirect: null, auth: null, route: 'lab1/web/web', reason: null });

  afterAll(async () => {
    for (const server of servers) await new Promise((resolve) => server.close(resolve));
  });

  it('passes a request’s method, body and end-to-end headers on, drops the hop-by-hop ones, and says when the upstream does not answer (502)', async () => {
    const upstreamPort = await listening(
      createServer((req, res) => {
        let body = '';
        req.on('data', (chunk: Buffer) => (body += chunk.toString()));
        req.on('end', () => res.end(JSON.stringify({ method: req.method, body, custom: req.headers['x-custom'], dropped: req.headers['x-hop'] ?? null, forwardedFor: req.headers['x-forwarded-for'] })));
      }),
    );
    const closedPort = await listening(createServer());
    await new Promise((resolve) => servers.pop()?.close(resolve));
    const file: RoutesFile = { version: 1, entries: [entry(upstreamPort), { ...entry(closedPort), host: 'gone.lab.example' }], asked: [] };
    const proxyPort = await listening(proxyServer({ routes: () => ({ file }), readSecret: () => undefined, logger: pino({ level: 'silent' }) }));
    const answer = await send(proxyPort, { host: 'web.lab.example', path: '/form', method: 'POST', headers: { 'x-custom': 'kept', 'x-hop': 'dropped', connection: 'x-hop' }, body: 'name=ada' });
    expect({ status: answer.status, body: JSON.parse(answer.body) as unknown }).toEqual({ status: 200, body: { method: 'POST', body: 'name=ada', custom: 'kept', dropped: null, forwardedFor: '127.0.0.1' } });
    const gone = await send(proxyPort, { host: 'gone.lab.example', path: '/' });
    expect({ status: gone.status, body: gone.body }).toEqual({ status: 502, body: expect.stringMatching(new RegExp(`^the upstream 127.0.0.1:${closedPort} of gone.lab.example did not answer: .*ECONNREFUSED`)) });
  });

  it('serves nothing while it has no routes file (503), and nothing it cannot read (400)', async () => {
    const proxyPort = await listening(proxyServer({ routes: () => ({ why: '/x/routes.json is not there yet' }), readSecret: () => undefined, logger: pino({ level: 'silent' }) }));
    expect(await send(proxyPort, { host: 'web.lab.example', path: '/' })).toMatchObject({ status: 503, body: 'the proxy has no routes to serve: /x/routes.json is not there yet\n' });
    const file: RoutesFile = { version: 1, entries: [entry(1)], asked: [] };
    const readable = await listening(proxyServer({ routes: () => ({ file }), readSecret: () => undefined, logger: pino({ level: 'silent' }) }));
    expect(await send(readable, { host: 'web.lab.example', path: '/%E0%A4%A' })).toMatchObject({ status: 400, body: 'the request path cannot be read\n' });
  });
});
