import { isIP } from 'node:net';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { consoleSessionRequestSchema } from '../../domain/operators/console-session.js';
import { ValidationError } from '../../errors.js';
import { badBody } from './api-schemas.js';
import type { ConsoleSessions } from './console-sessions.js';

// Who may read the console and the API (docs/decisions.md, "Reading needs a reason"). Every
// route with data — the pages, /api/*, the fact stream — answers only a request that carries an
// operator's session, whenever the server listens beyond loopback or a request arrives on an
// address that is not loopback, and on loopback too when MESH_CONSOLE_AUTH=required. Beyond
// loopback there is no setting that turns it off.

/** 'open': reads are open on loopback (the demo's default); 'required': a session on loopback too. */
export type ConsoleAuth = 'open' | 'required';

export interface ConsoleAccessSettings {
  auth: ConsoleAuth;
  /** how long a session lasts once opened */
  sessionTtlMs: number;
}

export const DEFAULT_SESSION_TTL_MS = 8 * 3_600_000;
const MAX_SESSION_TTL_MS = 24 * 3_600_000;

/** MESH_CONSOLE_AUTH (open|required, default open) and MESH_CONSOLE_SESSION_TTL_MS (default 8 h, at most 24 h). */
export const consoleAccessFromEnv = (env: NodeJS.ProcessEnv = process.env): ConsoleAccessSettings => {
  const auth = (env.MESH_CONSOLE_AUTH ?? '').trim() || 'open';
  if (auth !== 'open' && auth !== 'required') {
    throw new ValidationError(`MESH_CONSOLE_AUTH "${auth.slice(0, 40)}" is neither open nor required (beyond loopback a session is required whatever it says)`, { field: 'MESH_CONSOLE_AUTH', value: auth.slice(0, 40) });
  }
  const raw = env.MESH_CONSOLE_SESSION_TTL_MS;
  let sessionTtlMs = DEFAULT_SESSION_TTL_MS;
  if (raw !== undefined && raw !== '') {
    sessionTtlMs = Number(raw);
    if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(sessionTtlMs) || sessionTtlMs < 1_000 || sessionTtlMs > MAX_SESSION_TTL_MS) {
      throw new ValidationError(`MESH_CONSOLE_SESSION_TTL_MS "${raw.slice(0, 40)}" is not a whole number of milliseconds from 1000 to ${MAX_SESSION_TTL_MS} (a day)`, { field: 'MESH_CONSOLE_SESSION_TTL_MS', value: raw.slice(0, 40) });
    }
  }
  return { auth, sessionTtlMs };
};

/** 127.0.0.0/8, ::1, and either as an IPv4-mapped IPv6 address. `localhost` is a name, not an address: it counts as loopback only as a host to listen on. */
export const isLoopback = (address: string | undefined): boolean => {
  if (address === undefined) return false;
  const bare = address.replace(/^\[|\]$/g, '').replace(/^::ffff:/i, '');
  if (isIP(bare) === 4) return bare.startsWith('127.');
  if (isIP(bare) === 6) return /^(0{0,4}:){1,7}0{0,3}1$|^::1$/.test(bare);
  return bare === 'localhost';
};

/** The routes anyone may ask, by method and pattern: they carry no mesh data. */
const OPEN_ROUTES = new Set([
  // liveness and readiness, for a kubelet or a load balancer wherever it stands
  'GET /healthz',
  'GET /readyz',
  // how to speak to the API, and how to open a session
  'GET /api/openapi.json',
  'GET /api/session/challenge',
  'POST /api/session',
  'GET /session/:link',
  // the console's own stylesheet, icon and scripts: files of the package, nothing of the mesh
  'GET /assets/:file',
  // a command is signed by its operator, which says who sent it more strongly than a session would
  'POST /api/tools/:verb',
]);

/** Open while the server listens on loopback only; beyond it they need a session like any read. */
const OPEN_ON_LOOPBACK = new Set(['GET /metrics']);

export const SESSION_COOKIE = 'mesh_console_session';

/** The session token a request carries: `Authorization: Bearer`, else the console's cookie. */
const tokenOf = (request: FastifyRequest): string | undefined => {
  const bearer = /^Bearer ([A-Za-z0-9_-]{1,100})$/.exec(request.headers.authorization ?? '');
  if (bearer) return bearer[1];
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const [name, value] = part.trim().split('=', 2);
    if (name === SESSION_COOKIE && value && /^[A-Za-z0-9_-]{1,100}$/.test(value)) return value;
  }
  return undefined;
};

const refuse = (reply: FastifyReply, status: number, what: string, why: string, remedy: string): FastifyReply =>
  reply
    .code(status)
    .header('www-authenticate', 'Bearer realm="mesh console"')
    .header('cache-control', 'no-store')
    .send({ ok: false, refused: [{ what, why, remedy }], error: { code: 'unauthenticated' } });

const refusePage = (reply: FastifyReply, why: string, remedy: string): FastifyReply =>
  reply
    .code(401)
    .header('www-authenticate', 'Bearer realm="mesh console"')
    .header('cache-control', 'no-store')
    .type('text/plain; charset=utf-8')
    .send(`The mesh's console answers only an operator.\n\n${why}.\n\nTo read it: ${remedy}.\n`);

export const registerConsoleAccess = (app: FastifyInstance, sessions: ConsoleSessions, settings: ConsoleAccessSettings): void => {
  const boundToLoopback = (): boolean => {
    const bound = app.server.address() as AddressInfo | string | null;
    return typeof bound === 'object' && bound !== null && isLoopback(bound.address);
  };
  /** Whether this request must carry a session: beyond loopback always, on loopback as the setting says. */
  const sessionRequired = (request: FastifyRequest): boolean => settings.auth === 'required' || !boundToLoopback() || !isLoopback(request.socket.localAddress);

  app.addHook('onRequest', async (request, reply) => {
    const method = request.method === 'HEAD' ? 'GET' : request.method;
    const route = `${method} ${request.routeOptions.url ?? ''}`;
    if (OPEN_ROUTES.has(route)) return;
    if (OPEN_ON_LOOPBACK.has(route) && boundToLoopback() && isLoopback(request.socket.localAddress)) return;
    if (!sessionRequired(request)) return;
    const session = sessions.check(tokenOf(request));
    if (session.ok) return;
    const path = request.url.split('?')[0] ?? '';
    if (path.startsWith('/api/') || path === '/metrics') return refuse(reply, 401, `${request.method} ${path.slice(0, 100)}`, session.why, session.remedy);
    return refusePage(reply, session.why, session.remedy);
  });

  app.get('/api/session/challenge', async (request, reply) => {
    const challenge = sessions.challenge(request.socket.remoteAddress ?? 'unknown');
    if ('ok' in challenge) return reply.code(503).header('retry-after', '60').send({ ok: false, refused: [{ what: 'a nonce', why: challenge.why, remedy: challenge.remedy }], error: { code: 'unavailable' } });
    return reply.header('cache-control', 'no-store').send(challenge);
  });

  app.post('/api/session', async (request, reply) => {
    const parsed = consoleSessionRequestSchema.safeParse(request.body);
    if (!parsed.success) return reply.code(400).send(badBody('session', parsed.error.issues));
    const opened = sessions.open(parsed.data);
    if (!opened.ok) return refuse(reply, 401, `a session for ${parsed.data.operator.slice(0, 63)}`, opened.why, opened.remedy);
    return reply
      .code(201)
      .header('cache-control', 'no-store')
      .header('set-cookie', sessionCookie(opened.token, opened.expiresAt))
      .send({ ok: true, operator: opened.operator, token: opened.token, expiresAt: opened.expiresAt.toISOString(), open: `/session/${opened.link}` });
  });

  // The address `mesh console open` prints: good once, for a minute; it leaves the session in a cookie and the console's overview on the screen.
  app.get<{ Params: { link: string } }>('/session/:link', async (request, reply) => {
    const redeemed = sessions.redeem(request.params.link);
    if (!redeemed) return refusePage(reply, 'This address was opened already, or it expired (it is good once, for a minute)', 'run `mesh console open` again and open the address it prints');
    return reply.code(303).header('cache-control', 'no-store').header('set-cookie', sessionCookie(redeemed.token, redeemed.expiresAt)).header('location', '/').send();
  });
};

/** HttpOnly (no script reads it), SameSite=Strict (no other site's page sends it), for the session's life. */
const sessionCookie = (token: string, expiresAt: Date): string => `${SESSION_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${Math.max(0, Math.floor((expiresAt.getTime() - Date.now()) / 1_000))}`;
