import Fastify, { type FastifyInstance } from 'fastify';
import type { StoredEvent } from '../../domain/events/envelope.js';
import { exitCodeFor } from '../../errors.js';
import type { CommandDispatcher } from '../command-dispatcher.js';
import type { Overview } from '../overview.js';
import { refusalAnswer } from '../tool-server.js';
import { PAGE } from './page.js';

// The controller's HTTP face: the overview page, the read models it shows, a live stream of facts,
// and the same command verbs as the mesh-controller seat's tools, over the same dispatcher.
// Read-only except for signed commands; it never carries a secret value.

export interface HttpDeps {
  overview: () => Promise<Overview & { unknown: string[] }>;
  /** facts as they are stated; returns an unsubscribe */
  onFact: (listener: (fact: StoredEvent) => void) => () => void;
  /** the most recent facts, newest last */
  recentFacts: () => StoredEvent[];
  dispatcher: CommandDispatcher;
}

/** A refusal's HTTP status, from the same code the CLI maps to its exit code. */
const statusFor = (error: unknown): number => ({ 2: 400, 3: 409, 4: 409, 5: 404, 6: 503, 7: 500 })[exitCodeFor(error)] ?? 500;

export const buildApp = (deps: HttpDeps): FastifyInstance => {
  const app = Fastify({ logger: false });

  app.get('/', async (_request, reply) => reply.type('text/html; charset=utf-8').send(PAGE));

  app.get('/api/overview', async () => ({ ...(await deps.overview()), facts: deps.recentFacts() }));

  app.get('/api/facts/stream', (request, reply) => {
    reply.raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
    reply.raw.write(': facts as they are stated\n\n');
    const unsubscribe = deps.onFact((fact) => reply.raw.write(`event: fact\ndata: ${JSON.stringify(fact)}\n\n`));
    const keepAlive = setInterval(() => reply.raw.write(': still here\n\n'), 15_000);
    request.raw.on('close', () => {
      clearInterval(keepAlive);
      unsubscribe();
    });
  });

  app.post<{ Params: { verb: string } }>('/api/tools/:verb', async (request, reply) => {
    try {
      const result = await deps.dispatcher.dispatch(request.body, request.params.verb);
      return { ok: true, summary: result.summary, seq: result.seq, duplicate: result.duplicate, events: result.events };
    } catch (error) {
      return reply.code(statusFor(error)).send(refusalAnswer(error));
    }
  });

  return app;
};
