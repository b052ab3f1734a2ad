import Fastify, { type FastifyError, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { StoredEvent } from '../../domain/events/envelope.js';
import { exitCodeFor, MeshError } from '../../errors.js';
import type { CommandDispatcher } from '../command-dispatcher.js';
import type { Overview } from '../overview.js';
import type { Readiness } from '../readiness.js';
import { refusalAnswer } from '../tool-server.js';
import { badBody, toolRequestSchema, toolVerbs } from './api-schemas.js';
import { openApiDocument } from './openapi.js';
import { registerConsole } from './console/routes.js';
import type { ConsoleSource } from './console/source.js';
import { registerConsoleAccess, type ConsoleAccessSettings } from './console-access.js';
import { ConsoleSessions, type OperatorLookup, type SessionSettings } from './console-sessions.js';
import { checkedLimits, DEFAULT_HTTP_LIMITS, guardConnections, StreamSlots, streamKeepAliveMs, type ConnectionCounts, type HttpLimits } from './limits.js';

// The controller's HTTP face: the console (pages of the mesh, read from the projections), a live stream of facts,
// and the same command verbs as the mesh-controller seat's tools, over the same dispatcher; and
// what the tools that watch a service ask of it: metrics, liveness, readiness, the API's schema.
// Read-only except for signed commands; it never carries a secret value.

export interface HttpDeps {
  overview: () => Promise<Overview & { unknown: string[] }>;
  /** facts as they are stated; returns an unsubscribe */
  onFact: (listener: (fact: StoredEvent) => void) => () => void;
  /** the most recent facts, newest last */
  recentFacts: () => StoredEvent[];
  dispatcher: Pick<CommandDispatcher, 'dispatch'>;
  /** what the console's pages read (console/source.ts) */
  console: ConsoleSource;
  /** where a failure nobody meant is said: a 500 names no cause to the caller, the log does */
  logger: Logger;
  /** the metrics in Prometheus's text format (absent: no /metrics) */
  metrics?: { contentType: string; text: () => Promise<string> };
  /** whether the controller is ready for traffic (absent: ready whenever it answers) */
  readiness?: () => Promise<Readiness>;
  /** what it holds under abuse (limits.ts); absent: the defaults */
  limits?: HttpLimits;
  /**
   * who may read (console-access.ts): the setting, and the operators' keys as the controller's view
   * holds them. Absent: open on loopback, and beyond it nobody can open a session.
   */
  access?: { settings: ConsoleAccessSettings; operators: OperatorLookup; sessions?: Partial<SessionSettings> };
}

const counters = new WeakMap<FastifyInstance, () => ConnectionCounts>();

/** The connections an app counts now, and those it turned away or evicted since it started. */
export const connectionCounts = (app: FastifyInstance): ConnectionCounts | undefined => counters.get(app)?.();

/** A refusal's HTTP status, from the same code the CLI maps to its exit code. */
const statusFor = (error: unknown): number => ({ 2: 400, 3: 409, 4: 409, 5: 404, 6: 503, 7: 500 })[exitCodeFor(error)] ?? 500;

export const buildApp = (deps: HttpDeps): FastifyInstance => {
  const limits = checkedLimits(deps.limits ?? DEFAULT_HTTP_LIMITS);
  const app = Fastify({
    logger: false,
    bodyLimit: limits.bodyLimitBytes,
    connectionTimeout: limits.idleTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    // Passed to node's http.createServer: the headers' own bound, checked every second rather than every 30.
    http: { headersTimeout: limits.headersTimeoutMs, requestTimeout: limits.requestTimeoutMs, connectionsCheckingInterval: Math.min(1_000, limits.headersTimeoutMs) },
  });
  counters.set(app, guardConnections(app.server, limits).counts);
  const streams = new StreamSlots(limits);
  // A stopping server ends the fact streams itself: it never waits for clients that do not hang up.
  app.addHook('preClose', async () => streams.endAll());
  const document = openApiDocument();
  const access = deps.access ?? { settings: { auth: 'open' as const, sessionTtlMs: 0 }, operators: () => undefined };
  const sessionSettings: Partial<SessionSettings> = access.settings.sessionTtlMs > 0 ? { sessionTtlMs: access.settings.sessionTtlMs, ...access.sessions } : { ...access.sessions };
  registerConsoleAccess(app, new ConsoleSessions(access.operators, { settings: sessionSettings }), access.settings);

  // What fastify itself turns away (a body that is not JSON, too large) answers as the tools
  // answer a bad body; anything else is a failure, logged here and named to the caller only as one.
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      return reply.code(status).send({ ok: false, refused: [{ what: 'body', why: error.message, remedy: 'send a JSON body as /api/openapi.json gives it' }], error: { code: 'validation', field: 'body' } });
    }
    deps.logger.error({ err: error, method: request.method, url: request.url }, 'HTTP request failed');
    return reply.code(500).send(refusalAnswer(error));
  });

  registerConsole(app, deps.console, deps.logger);

  app.get('/api/overview', async () => ({ ...(await deps.overview()), facts: deps.recentFacts() }));

  app.get('/api/facts/stream', (request, reply) => {
    // Bounded per address and in all: over either, a 503 that says which, and when to ask again.
    const slot = streams.take(request.socket.remoteAddress ?? 'unknown', () => reply.raw.end());
    if ('why' in slot) {
      return reply
        .code(503)
        .header('retry-after', String(slot.retryAfterSeconds))
        .send({ ok: false, refused: [{ what: 'GET /api/facts/stream', why: slot.why, remedy: `close a stream you hold, or ask again in ${slot.retryAfterSeconds} s` }], error: { code: 'unavailable' } });
    }
    reply.raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
    reply.raw.write(': facts as they are stated\n\n');
    const unsubscribe = deps.onFact((fact) => reply.raw.write(`event: fact\ndata: ${JSON.stringify(fact)}\n\n`));
    const keepAlive = setInterval(() => reply.raw.write(': still here\n\n'), streamKeepAliveMs(limits));
    reply.raw.once('close', () => {
      clearInterval(keepAlive);
      unsubscribe();
      slot.release();
    });
    return reply.hijack();
  });

  app.post<{ Params: { verb: string } }>('/api/tools/:verb', async (request, reply) => {
    const { verb } = request.params;
    const schema = toolRequestSchema(verb);
    if (!schema) {
      return reply.code(404).send({
        ok: false,
        refused: [{ what: verb, why: 'there is no such tool', remedy: `send one of: ${toolVerbs().join(', ')}` }],
        error: { code: 'not_found', field: 'verb' },
      });
    }
    // The same schemas the dispatcher reads, checked first so a bad body is a 400 naming every
    // field; the body is then decided as it came, since the signature is over what was sent.
    const parsed = schema.safeParse(request.body);
    if (!parsed.success) return reply.code(400).send(badBody(verb, parsed.error.issues));
    try {
      const result = await deps.dispatcher.dispatch(request.body, verb);
      return { ok: true, summary: result.summary, seq: result.seq, duplicate: result.duplicate, events: result.events };
    } catch (error) {
      if (!(error instanceof MeshError)) deps.logger.error({ err: error, verb }, 'HTTP command failed');
      return reply.code(statusFor(error)).send(refusalAnswer(error));
    }
  });

  app.get('/healthz', async () => ({ ok: true }));

  app.get('/readyz', async (_request, reply) => {
    const ready = deps.readiness ? await deps.readiness() : { ready: true, notReady: [] };
    return reply.code(ready.ready ? 200 : 503).header('cache-control', 'no-store').send(ready);
  });

  if (deps.metrics) {
    const metrics = deps.metrics;
    app.get('/metrics', async (_request, reply) => reply.type(metrics.contentType).send(await metrics.text()));
  }

  app.get('/api/openapi.json', async () => document);

  return app;
};
