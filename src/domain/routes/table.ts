import { resolveRequirements } from '../assignments/resolve.js';
import { assignmentOf } from '../assignments/state.js';
import { manifestOf } from '../catalogue/state.js';
import type { Resource } from '../declarations/declaration.js';
import type { MeshState } from '../mesh/state.js';
import { nodeNamed } from '../nodes/state.js';
import type { AssignmentRef } from '../seats/events.js';
import type { RouteContribution } from './contribution.js';
import type { Grant } from './state.js';
import { currentGrants, routesAsked, type Ask } from './grants.js';

// The routes file: the contract between the mesh and any proxy (ADR 0108, R108.6), written to the
// node of mesh-proxy's holder. One entry per (host, path, priority), in one total order, so the same
// log gives the same bytes. Authentication names a secret and the file the proxy reads it from —
// never the value — and an entry whose secret cannot be named refuses (fails closed).

export interface RouteEntry {
  host: string;
  path: string;
  priority: number;
  action: 'forward' | 'refuse' | 'redirect';
  /** where a forwarded request goes */
  target: { address: string; port: number } | null;
  /** a redirect's answer */
  redirect: { to: string; status: number } | null;
  /** the secret a request must present, and where the proxy's node has it; the proxy refuses when it cannot read it */
  auth: { secret: string; file: string } | null;
  /** `<node>/<module>/<route>`: who contributed it */
  route: string;
  /** why an entry refuses when its route meant to forward */
  reason: string | null;
}

export interface RoutesFile {
  version: 1;
  entries: RouteEntry[];
  /**
   * The names the mesh asks the proxy for and it has not handed back yet (ADR 0007): the proxy
   * answers each with `answer-consumer` on its own bus tool, requirement `route:<name>`, value
   * `publicName`; until then no entry serves it and the module's `${route:…}` waits.
   */
  asked: Ask[];
}

const ACTION_ORDER = { refuse: 0, redirect: 1, forward: 2 } as const;
const compareText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * R108.3: host, then higher priority first, then the longer path (the more specific), then the path
 * itself, then refusals before redirects before forwards, then the contributor: every pair of
 * entries is ordered, by nothing but what the log says.
 */
export const compareEntries = (a: RouteEntry, b: RouteEntry): number =>
  compareText(a.host, b.host) || (a.priority === b.priority ? 0 : a.priority > b.priority ? -1 : 1) || b.path.length - a.path.length || compareText(a.path, b.path) || ACTION_ORDER[a.action] - ACTION_ORDER[b.action] || compareText(a.route, b.route);

/** A route's public URL: the proxy terminates TLS, so https (issue 122 asked; docs/decisions.md). */
export const publicUrl = (publicName: string, location: string): string => `https://${publicName}${location === '/' ? '' : location}`;

/** Where the proxy's node keeps a route's secret, and where the routes file lands. */
export const routeSecretPath = (root: string, proxyModule: string, secret: string): string => `${root}/.mesh/${proxyModule}/route-secrets/${secret.replaceAll('/', '.')}`;
export const routesDirectory = (root: string, proxyModule: string): string => `${root}/.mesh/${proxyModule}/routes`;
export const routesFilePath = (root: string, proxyModule: string): string => `${routesDirectory(root, proxyModule)}/routes.json`;

interface Contribution {
  grant: Grant;
  route: RouteContribution;
  ports: Map<string, number>;
  secret: { name: string; vault: AssignmentRef } | { unresolved: string } | null;
}

const contributionOf = (state: MeshState, grant: Grant): Contribution | undefined => {
  const assignment = assignmentOf(state.assignments, grant);
  const manifest = manifestOf(state.catalogue, grant.module);
  const route = manifest?.routes?.find((r) => r.name === grant.route);
  if (!assignment || !manifest || !route) return undefined;
  const input = { ...assignment, values: Object.fromEntries(Object.entries(assignment.values).map(([k, v]) => [k, String(v)])) };
  const { resolutions, problems } = resolveRequirements(state, input, manifest.requires);
  const ports = new Map(resolutions.flatMap((r) => (r.answer.kind === 'port' ? [[r.requirement, r.answer.port] as const] : [])));
  const wanted = route.policy.find((p) => p.kind === 'authentication');
  let secret: Contribution['secret'] = null;
  if (wanted) {
    const answer = resolutions.find((r) => r.requirement === wanted.secret)?.answer;
    secret =
      answer?.kind === 'secret'
        ? { name: answer.name, vault: answer.holder }
        : { unresolved: problems.find((p) => p.what.includes(wanted.secret))?.why ?? `its secret ${wanted.secret} is not answered` };
  }
  return { grant, route, ports, secret };
};

/** The entries of every granted name, and the secrets the proxy's node needs to check them. */
export const routesTable = (state: MeshState, proxy: { root: string; module: string }): { file: RoutesFile; secrets: { name: string; path: string; vault: AssignmentRef }[] } => {
  const entries: RouteEntry[] = [];
  const secrets = new Map<string, { name: string; path: string; vault: AssignmentRef }>();
  const grants = currentGrants(state);
  for (const grant of grants) {
    const found = contributionOf(state, grant);
    if (!found) continue;
    const { route, ports, secret } = found;
    const routeKey = `${grant.node}/${grant.module}/${grant.route}`;
    const base = { host: grant.publicName, route: routeKey, target: null, redirect: null, auth: null, reason: null };
    if (grant.name !== grant.route) {
      const own = grants.find((g) => g.node === grant.node && g.module === grant.module && g.name === grant.route);
      const policy = route.policy.find((p) => p.kind === 'redirect' && p.from === grant.name);
      if (own && policy?.kind === 'redirect') entries.push({ ...base, path: '/', priority: 0, action: 'redirect', redirect: { to: publicUrl(own.publicName, route.location), status: policy.status } });
      continue;
    }
    const node = nodeNamed(state.nodes, grant.node);
    const address = node?.address ?? grant.node;
    let auth: RouteEntry['auth'] = null;
    let closed: string | null = null;
    if (secret && 'name' in secret) {
      const path = routeSecretPath(proxy.root, proxy.module, secret.name);
      secrets.set(secret.name, { name: secret.name, path, vault: secret.vault });
      auth = { secret: secret.name, file: path };
    } else if (secret) {
      closed = `authentication cannot be checked: ${secret.unresolved}`;
    }
    const forward = (path: string, priority: number, port: string): RouteEntry => {
      const number = ports.get(port);
      const reason = closed ?? (number === undefined ? `its port ${port} is not answered on ${grant.node}` : null);
      return reason ? { ...base, path, priority, action: 'refuse', reason } : { ...base, path, priority, action: 'forward', target: { address, port: number ?? 0 }, auth };
    };
    entries.push(forward(route.location, route.priority, route.port));
    for (const policy of route.policy) {
      if (policy.kind === 'path') entries.push(forward(policy.path, policy.priority, policy.port ?? route.port));
      if (policy.kind === 'refuse') entries.push({ ...base, path: policy.path, priority: policy.priority, action: 'refuse', reason: 'refused on this path by the route' });
    }
  }
  entries.sort(compareEntries);
  return { file: { version: 1, entries, asked: routesAsked(state) }, secrets: [...secrets.values()].sort((a, b) => compareText(a.name, b.name)) };
};

/** The proxy's resources on its node: the routes file in a directory of its own, and its routes' secrets (delivered by the vault, as any secret, readable only by the user the proxy's processes run as). */
export const proxyResources = (state: MeshState, proxy: { root: string; module: string; owner: string | null }): Resource[] => {
  const { file, secrets } = routesTable(state, proxy);
  return [
    { key: `${proxy.module}/routes-directory`, module: proxy.module, kind: 'directory', path: routesDirectory(proxy.root, proxy.module), owner: null, mode: '0755' },
    { key: `${proxy.module}/routes`, module: proxy.module, kind: 'file', path: routesFilePath(proxy.root, proxy.module), content: `${JSON.stringify(file, null, 2)}\n`, mode: '0644' },
    ...secrets.map((s): Resource => ({ key: `${proxy.module}/route-secret-${s.name.replaceAll('/', '.')}`, module: proxy.module, kind: 'secret', secret: s.name, path: s.path, owner: proxy.owner, vault: s.vault })),
  ];
};
