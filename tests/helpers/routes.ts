import { providerAnswerSubject } from '../../src/domain/bus/users.js';
import { routesAsked, type Ask } from '../../src/domain/routes/grants.js';
import type { ToolAnswer } from '../../src/controller/tool-server.js';
import type { TestMesh } from './test-mesh.js';
import { fixtureManifest } from './given.js';

// Manifests of modules that contribute routes, for the route tests of every tier.

export const HTTP_PORT = (port: number) => ({ name: 'http-port', contract: 'port', provider: 'host', port });
export const ADMIN_LOGIN = { name: 'admin-login', contract: 'secret', provider: 'module', seat: 'mesh-vault' };

/** A module serving one route `name` on its http-port, with `policy`, telling its software its own URL. */
export const routedModule = (module: string, options: { route?: string; policy?: unknown[]; priority?: number; location?: string; run?: string[]; requires?: unknown[] } = {}): Record<string, unknown> => ({
  name: module,
  requires: [HTTP_PORT(8080), ...(options.requires ?? [])],
  routes: [{ name: options.route ?? module, port: 'http-port', ...(options.location ? { location: options.location } : {}), ...(options.priority !== undefined ? { priority: options.priority } : {}), policy: options.policy ?? [] }],
  resources: { processes: [{ name: 'server', run: options.run ?? ['server', '--public-url', `\${route:${options.route ?? module}}`, '--port', '${http-port}'] }] },
});

/** A module with no route: what a domain change must leave alone. */
export const plainModule = (module: string): Record<string, unknown> => ({
  name: module,
  requires: [HTTP_PORT(9090)],
  resources: { processes: [{ name: 'server', run: ['server', '--port', '${http-port}'] }] },
});

/** The foundation a route needs, as manifests: the bus, the vault that makes a route's secret, and the proxy. */
export const ROUTE_FOUNDATION = ['nats', 'vault', 'route-proxy'].map((name) => fixtureManifest(name));

/** The commands that put the foundation on `node`, each holding its seat. */
export const foundationAssignments = (node: string) =>
  [
    { module: 'nats', hold: ['mesh-broker'], values: {} },
    { module: 'vault', hold: ['mesh-vault'], values: {} },
    { module: 'route-proxy', hold: ['mesh-proxy'], values: { 'acme-email': 'ops@mesh.invalid' } },
  ].map((a) => ({ type: 'assign' as const, module: a.module, node, hold: a.hold, pins: {}, values: a.values as Record<string, string>, placements: {} }));

/**
 * What a proxy holding mesh-proxy does with what it is asked (ADR 0007): hands back each name as
 * the mesh asked for it, on its own answer-consumer subject. `asked` is the routes file's list (as
 * a proxy reads it from its node), or what the mesh asks now. Returns each answer.
 */
export const handBackAsked = async (t: TestMesh, proxy: { node: string; module: string }, asked?: Ask[]): Promise<ToolAnswer[]> => {
  const asks = asked ?? routesAsked(await t.mesh.current());
  const answers: ToolAnswer[] = [];
  for (const ask of asks) {
    const body = { consumer: { node: ask.node, module: ask.module }, requirement: `route:${ask.name}`, values: { publicName: ask.publicName } };
    const reply = await t.nc.request(providerAnswerSubject(t.names.prefix, proxy.node, proxy.module), JSON.stringify(body), { timeout: 10_000 });
    answers.push(reply.json<ToolAnswer>());
  }
  return answers;
};
