import { timingSafeEqual } from 'node:crypto';
import type { RouteEntry, RoutesFile } from './table.js';

// How a proxy reads the routes file (ADR 0108, R108.6: the contract is the file, and any proxy may
// implement it): the first entry of the request's host whose path prefixes the request's path, in
// the file's order, decides. Authentication compares the request's basic credentials with the
// secret's file; a secret that cannot be read refuses — the route fails closed, never open. A
// secret written `user:password` is that pair; one with no `:` (a value the vault made) is the
// password, under any user name, so a browser's login box can present it.

export interface RouteRequest {
  host: string;
  path: string;
  /** `user:password` of the request's basic authentication, if it sent one */
  credentials?: string;
}

export type RouteAnswer =
  | { status: 'forward'; target: { address: string; port: number }; entry: RouteEntry }
  | { status: 301 | 302 | 307 | 308; location: string; entry: RouteEntry }
  | { status: 401 | 403 | 404 | 503; why: string; entry?: RouteEntry };

const same = (a: string, b: string): boolean => {
  const [x, y] = [Buffer.from(a), Buffer.from(b)];
  return x.length === y.length && timingSafeEqual(x, y);
};

/** Whether `presented` (`user:password`) is the credential the secret holds. */
export const credentialMatches = (presented: string | undefined, secret: string): boolean => {
  if (presented === undefined) return false;
  if (secret.includes(':')) return same(presented, secret);
  const at = presented.indexOf(':');
  return same(at < 0 ? presented : presented.slice(at + 1), secret);
};

const under = (path: string, prefix: string): boolean => prefix === '/' || path === prefix || path.startsWith(prefix.endsWith('/') ? prefix : `${prefix}/`);

export const answerRequest = (file: RoutesFile, request: RouteRequest, readSecret: (file: string) => string | undefined): RouteAnswer => {
  const host = request.host.toLowerCase().replace(/:\d+$/, '');
  const entry = file.entries.find((e) => e.host === host && under(request.path, e.path));
  if (!entry) return { status: 404, why: `no route for ${host}${request.path}` };
  switch (entry.action) {
    case 'refuse':
      return { status: 403, why: entry.reason ?? 'refused on this path', entry };
    case 'redirect':
      return entry.redirect ? { status: entry.redirect.status as 301 | 302 | 307 | 308, location: `${entry.redirect.to}${request.path === '/' ? '' : request.path}`, entry } : { status: 503, why: 'a redirect with nowhere to go', entry };
    case 'forward': {
      if (!entry.target) return { status: 503, why: 'a forward with no target', entry };
      if (entry.auth) {
        const expected = readSecret(entry.auth.file)?.trim();
        if (!expected) return { status: 403, why: `the secret ${entry.auth.secret} is not delivered: refused rather than open`, entry };
        if (!credentialMatches(request.credentials, expected)) return { status: 401, why: 'authentication required', entry };
      }
      return { status: 'forward', target: entry.target, entry };
    }
  }
};
