import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { VNode } from 'preact';
import { renderToString } from 'preact-render-to-string';
import type { Logger } from 'pino';
import type { LogFilters } from '../../../cli/log-filters.js';
import { projectRoot } from '../../../config.js';
import { exitCodeFor, MeshError } from '../../../errors.js';
import { HomePage } from './home.js';
import { CataloguePage, LogPage, NotFoundPage, ProjectionsPage } from './lists.js';
import { ModulePage } from './module.js';
import { NodePage } from './node.js';
import { SeatPage } from './seat.js';
import type { ConsoleSource } from './source.js';

// The console's routes: each page rendered on the server from what the source reads, with a
// Content-Security-Policy that lets it run only the scripts and styles this process serves. Every
// route only reads: a change to the mesh is a signed command, never a form here.

/** Only what this process serves: no inline script or style, no frame, nothing from elsewhere. */
export const CONSOLE_CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

const ASSETS = join(projectRoot, 'src', 'controller', 'http', 'console', 'assets');

// A Map, never a plain object: an asset named `constructor`, `__proto__` or `toString` is one the
// console does not have (404), not a property every object inherits (a 500).
const assets = (): ReadonlyMap<string, { type: string; body: string }> =>
  new Map([
    ['console.css', { type: 'text/css; charset=utf-8', body: readFileSync(join(ASSETS, 'console.css'), 'utf8') }],
    ['favicon.svg', { type: 'image/svg+xml', body: readFileSync(join(ASSETS, 'favicon.svg'), 'utf8') }],
    ['console.js', { type: 'text/javascript; charset=utf-8', body: readFileSync(join(ASSETS, 'console.js'), 'utf8') }],
    // htmx from the package the project installs: the console loads nothing from the network.
    ['htmx.min.js', { type: 'text/javascript; charset=utf-8', body: readFileSync(createRequire(import.meta.url).resolve('htmx.org/dist/htmx.min.js'), 'utf8') }],
  ]);

const send = (reply: FastifyReply, status: number, page: VNode): FastifyReply =>
  reply
    .code(status)
    .type('text/html; charset=utf-8')
    .header('content-security-policy', CONSOLE_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('cache-control', 'no-store')
    .send(`<!doctype html>\n${renderToString(page)}`);

/** A query parameter as one string, or undefined when absent or empty (a form sends empty fields). */
const one = (value: unknown): string | undefined => {
  const text = Array.isArray(value) ? value[0] : value;
  return typeof text === 'string' && text.trim() !== '' ? text.trim() : undefined;
};

/** `mesh log`'s filters from a query string: `type` repeated, or several in one field split by spaces or commas. */
export const logFiltersOf = (query: Record<string, unknown>): LogFilters => {
  const types = ([] as unknown[]).concat(query.type ?? []).flatMap((t) => (typeof t === 'string' ? t.split(/[\s,]+/) : [])).filter(Boolean);
  return { since: one(query.since), aggregate: one(query.aggregate), type: types, actor: one(query.actor), correlation: one(query.correlation), after: one(query.after), before: one(query.before) };
};

export const registerConsole = (app: FastifyInstance, source: ConsoleSource, logger: Logger): void => {
  const served = assets();
  app.get<{ Params: { file: string } }>('/assets/:file', async (request, reply) => {
    const asset = served.get(request.params.file);
    if (!asset) return reply.code(404).type('text/plain; charset=utf-8').send('no such asset');
    return reply.type(asset.type).header('x-content-type-options', 'nosniff').header('cache-control', 'no-cache').send(asset.body);
  });

  // A read that fails is said on the page, with the status the CLI's exit code maps to.
  const failed = (reply: FastifyReply, what: string, error: unknown): FastifyReply => {
    if (!(error instanceof MeshError)) logger.error({ err: error, what }, 'the console could not read what a page shows');
    const status = ({ 2: 400, 5: 404, 6: 503, 7: 500 } as Record<number, number>)[exitCodeFor(error)] ?? 503;
    return send(reply, status, <NotFoundPage what={what} why={`not known: ${(error as Error).message}`} />);
  };
  const page = async (reply: FastifyReply, what: string, render: (now: Date) => Promise<VNode | { status: number; page: VNode }>): Promise<FastifyReply> => {
    try {
      const rendered = await render(new Date());
      return 'status' in rendered && 'page' in rendered ? send(reply, rendered.status, rendered.page) : send(reply, 200, rendered as VNode);
    } catch (error) {
      return failed(reply, what, error);
    }
  };
  const missing = (what: string, why: string) => ({ status: 404, page: <NotFoundPage what={what} why={why} /> });

  app.get('/', (_request, reply) => page(reply, 'the mesh', async (now) => <HomePage view={await source.home()} now={now} />));

  app.get<{ Params: { name: string } }>('/nodes/:name', (request, reply) => {
    const { name } = request.params;
    return page(reply, `node ${name}`, async (now) => {
      const view = await source.node(name);
      return view ? <NodePage view={view} now={now} /> : missing(`node ${name}`, `No node ${name} is known to the mesh.`);
    });
  });

  app.get<{ Params: { name: string } }>('/modules/:name', (request, reply) => {
    const { name } = request.params;
    return page(reply, `module ${name}`, async () => {
      const view = await source.module(name);
      return view ? <ModulePage view={view} /> : missing(`module ${name}`, `No module ${name} is registered.`);
    });
  });

  app.get<{ Params: { name: string } }>('/seats/:name', (request, reply) => {
    const { name } = request.params;
    return page(reply, `seat ${name}`, async () => {
      const view = await source.seat(name);
      return view ? <SeatPage view={view} /> : missing(`seat ${name}`, `No seat ${name} is known, by that name or a former one.`);
    });
  });

  app.get('/catalogue', (_request, reply) => page(reply, 'catalogue', async () => <CataloguePage modules={await source.catalogue()} />));

  app.get('/projections', (_request, reply) => page(reply, 'projections', async () => <ProjectionsPage states={await source.projections()} />));

  app.get('/log', (request, reply) => {
    const filters = logFiltersOf(request.query as Record<string, unknown>);
    return page(reply, 'log', async () => {
      try {
        return <LogPage filters={filters} view={await source.log(filters)} refusal={undefined} />;
      } catch (error) {
        // A filter the CLI would refuse (exit 2) is refused here the same way, the form kept.
        if (exitCodeFor(error) !== 2) throw error;
        return { status: 400, page: <LogPage filters={filters} view={undefined} refusal={(error as Error).message} /> };
      }
    });
  });
};
