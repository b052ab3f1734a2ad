import { createServer, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { answerRequest } from '../../domain/routes/answer.js';
import type { RoutesFile } from '../../domain/routes/table.js';

// The proxy's HTTP side: every request is decided by `answerRequest` against the routes file as
// it reads now (ADR 0108: the first entry of the host whose path prefixes the request's), then
// forwarded to the module's address and port, redirected, or refused with the reason. The path
// decided on is the one forwarded, normalised first (dot segments resolved, repeated slashes
// collapsed, percent-escapes read), so `/a/../api/internal`, `//api/internal` or `/api/%69nternal`
// meet the refusal on `/api/internal` rather than slip past it to an upstream that normalises.
// Plain HTTP: TLS is not terminated here (docs/decisions.md, "A proxy the mesh runs").

export interface ProxyServerOptions {
  /** the routes file as last read, or why there is none */
  routes: () => { file: RoutesFile } | { why: string };
  /** a route secret's value, read from the file the entry names; undefined when it is not there */
  readSecret: (file: string) => string | undefined;
  logger: Logger;
  /** how long an upstream may take to answer before the request is answered 504 */
  upstreamTimeoutMs?: number;
}

/** Headers of one hop, never passed on (RFC 9110 §7.6.1), and those the Connection header names. */
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade'];

const withoutHopHeaders = (headers: IncomingHttpHeaders): IncomingHttpHeaders => {
  const named = String(headers.connection ?? '')
    .split(',')
    .map((h) => h.trim().toLowerCase())
    .filter(Boolean);
  const kept: IncomingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) if (!HOP_BY_HOP.includes(name) && !named.includes(name)) kept[name] = value;
  return kept;
};

/** The path a request is decided on and forwarded with, or undefined when it cannot be read. */
export const normalisedPath = (url: string): { decided: string; pathname: string; search: string } | undefined => {
  let parsed: URL;
  try {
    parsed = new URL(url.startsWith('/') ? `http://proxy${url.replace(/^\/+/, '/')}` : url);
  } catch {
    return undefined;
  }
  const pathname = parsed.pathname.replace(/\/{2,}/g, '/');
  try {
    return { decided: decodeURIComponent(pathname).replace(/\/{2,}/g, '/'), pathname, search: parsed.search };
  } catch {
    return undefined;
  }
};

/** `user:password` of a request's basic authentication, if it sent one. */
const basicCredentials = (header: string | undefined): string | undefined => {
  const match = header?.match(/^Basic\s+([A-Za-z0-9+/=]+)\s*$/i);
  return match?.[1] ? Buffer.from(match[1], 'base64').toString('utf8') : undefined;
};

const answerText = (res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void => {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', ...headers });
  res.end(`${text}\n`);
};

export const proxyServer = (options: ProxyServerOptions): Server => {
  const { logger } = options;
  const forward = (req: IncomingMessage, res: ServerResponse, target: { address: string; port: number }, path: string, host: string, authenticated: boolean): void => {
    const headers = withoutHopHeaders(req.headers);
    // The credential opened the route at the proxy; the module is not handed it again.
    if (authenticated) delete headers.authorization;
    const from = req.socket.remoteAddress ?? '';
    headers['x-forwarded-for'] = headers['x-forwarded-for'] ? `${String(headers['x-forwarded-for'])}, ${from}` : from;
    headers['x-forwarded-host'] = host;
    headers['x-forwarded-proto'] = 'http';
    const upstream = httpRequest({ host: target.address, port: target.port, method: req.method, path, headers, timeout: options.upstreamTimeoutMs ?? 30_000 }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, withoutHopHeaders(answer.headers));
      answer.pipe(res);
    });
    upstream.on('timeout', () => upstream.destroy(new Error(`no answer in ${options.upstreamTimeoutMs ?? 30_000} ms`)));
    upstream.on('error', (error) => {
      logger.warn({ host, path, target, err: error.message }, 'the upstream did not answer');
      if (res.headersSent) res.destroy();
      else answerText(res, /no answer in/.test(error.message) ? 504 : 502, `the upstream ${target.address}:${target.port} of ${host} did not answer: ${error.message}`);
    });
    // A client that goes away takes its upstream request with it.
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
    req.pipe(upstream);
  };

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const current = options.routes();
    if ('why' in current) return answerText(res, 503, `the proxy has no routes to serve: ${current.why}`);
    const host = String(req.headers.host ?? '');
    const path = normalisedPath(req.url ?? '/');
    if (!path) return answerText(res, 400, 'the request path cannot be read');
    const answer = answerRequest(current.file, { host, path: path.decided, ...(basicCredentials(req.headers.authorization) !== undefined ? { credentials: basicCredentials(req.headers.authorization) } : {}) }, options.readSecret);
    logger.debug({ host, path: path.decided, status: answer.status, route: answer.entry?.route }, 'a request');
    switch (answer.status) {
      case 'forward':
        return forward(req, res, answer.target, `${path.pathname}${path.search}`, host, answer.entry.auth !== null);
      case 301:
      case 302:
      case 307:
      case 308: {
        // As answerRequest composes it, from the path as the request wrote it (escapes kept) and its query.
        const location = answer.entry.redirect ? `${answer.entry.redirect.to}${path.pathname === '/' ? '' : path.pathname}${path.search}` : answer.location;
        return answerText(res, answer.status, `see ${location}`, { location });
      }
      case 401:
        return answerText(res, 401, answer.why, { 'www-authenticate': `Basic realm="${host.replace(/[^A-Za-z0-9.:-]/g, '')}", charset="UTF-8"` });
      default:
        return answerText(res, answer.status, answer.why);
    }
  };

  return createServer((req, res) => {
    try {
      handle(req, res);
    } catch (error) {
      logger.error({ err: (error as Error).message, url: req.url }, 'a request could not be answered');
      if (!res.headersSent) answerText(res, 500, 'the proxy could not answer this request');
      else res.destroy();
    }
  });
};
