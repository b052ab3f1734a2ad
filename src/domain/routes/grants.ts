import type { EventOf } from '../events/registry.js';
import type { Manifest } from '../catalogue/manifest.js';
import type { MeshState } from '../mesh/state.js';
import type { Problem } from '../refusal.js';
import type { AssignmentRef } from '../seats/events.js';
import { holderOf, seatNamed } from '../seats/state.js';
import { allAssignments, assignmentOf } from '../assignments/state.js';
import { manifestOf } from '../catalogue/state.js';
import { nodeNamed } from '../nodes/state.js';
import { PublicNameGranted } from './events.js';
import { allGrants, grantsOf, holderOfPublicName, type Grant } from './state.js';

// ADR 0007: a module's routes ask for names, `<name>.<the node's public domain>`, and the holder of
// mesh-proxy hands each public name back (answer-consumer, on its own bus tool). A public name has
// one holder across the mesh (R112.11): a second claim is refused naming the first.

export const PROXY_SEAT = 'mesh-proxy';

/** The names a manifest's routes ask for: each route's own, and each redirect's `from`. */
export const namesAskedFor = (manifest: Manifest): { route: string; name: string }[] =>
  (manifest.routes ?? []).flatMap((route) => [{ route: route.name, name: route.name }, ...route.policy.flatMap((p) => (p.kind === 'redirect' ? [{ route: route.name, name: p.from }] : []))]);

/** The holder of mesh-proxy, if the mesh has the seat and someone holds it. */
export const proxyHolder = (state: MeshState): AssignmentRef | undefined => {
  const seat = seatNamed(state.seats, PROXY_SEAT);
  return seat ? holderOf(state.seats, seat.id, 'mesh') : undefined;
};

/** A name one assignment asks the proxy for: `<name>.<the node's public domain>`. */
export interface Ask {
  node: string;
  module: string;
  route: string;
  name: string;
  publicName: string;
}

/** The names `assignment` asks for under `domain`. */
export const asksOf = (assignment: AssignmentRef, manifest: Manifest, domain: string): Ask[] =>
  namesAskedFor(manifest).map(({ route, name }) => ({ node: assignment.node, module: assignment.module, route, name, publicName: `${name}.${domain}` }));

/**
 * The grants of `assignment` that answer what it asks now: a name handed back under the node's
 * public domain as it is. One handed back under a domain the node has left is asked for again.
 */
export const currentGrantsOf = (state: MeshState, assignment: AssignmentRef): Map<string, Grant> => {
  const domain = nodeNamed(state.nodes, assignment.node)?.publicDomain;
  const current = new Map<string, Grant>();
  if (domain === undefined) return current;
  for (const [name, grant] of grantsOf(state.routes, assignment)) if (grant.publicName.endsWith(`.${domain}`)) current.set(name, grant);
  return current;
};

/** Every grant that answers what its assignment asks now (`currentGrantsOf`): the names the proxy serves. */
export const currentGrants = (state: MeshState): Grant[] =>
  allGrants(state.routes).filter((grant) => {
    const domain = nodeNamed(state.nodes, grant.node)?.publicDomain;
    return domain !== undefined && grant.publicName.endsWith(`.${domain}`);
  });

/** Who else claims `publicName`: the assignment it was handed back to, or one that asks for it and waits. */
const claimantOf = (state: MeshState, publicName: string, asker: AssignmentRef & { name?: string }): { claimant: Grant | Ask; granted: boolean } | undefined => {
  const holder = holderOfPublicName(state.routes, publicName);
  const same = (c: { node: string; module: string; name: string }): boolean => c.node === asker.node && c.module === asker.module && (asker.name === undefined || c.name === asker.name);
  if (holder && !same(holder)) return { claimant: holder, granted: true };
  for (const ask of routesAsked(state)) if (ask.publicName === publicName && !(ask.node === asker.node && ask.module === asker.module)) return { claimant: ask, granted: false };
  return undefined;
};

const claimedWhy = (publicName: string, found: { claimant: Grant | Ask; granted: boolean }): string =>
  found.granted
    ? `the public name ${publicName} is held by ${found.claimant.node}/${found.claimant.module} (route ${found.claimant.route}); a public name has one holder across the mesh`
    : `the public name ${publicName} is claimed by ${found.claimant.node}/${found.claimant.module} (route ${found.claimant.route}), waiting for the holder of ${PROXY_SEAT} to hand it back; a public name has one holder across the mesh`;

/**
 * Whether `assignment`'s routes can be asked for under `domain` (ADR 0007): someone holds
 * mesh-proxy to hand the names back, the node has a public domain, and no other assignment holds
 * or claims one of them. The names themselves are the holder's answer (`answer-consumer`), not
 * this decision's. With `skip`, a domain change while nobody holds the seat asks nothing yet.
 */
export const claimRoutes = (
  state: MeshState,
  assignment: AssignmentRef,
  manifest: Manifest,
  domain: string | undefined,
  options: { whenNoProxy: 'refuse' | 'skip' } = { whenNoProxy: 'refuse' },
): { asks: Ask[]; problems: Problem[] } => {
  const asked = namesAskedFor(manifest);
  if (asked.length === 0) return { asks: [], problems: [] };
  const problems: Problem[] = [];
  const proxy = proxyHolder(state);
  if (!proxy && options.whenNoProxy === 'skip') return { asks: [], problems: [] };
  if (!proxy) {
    problems.push({
      what: `routes of ${assignment.module}`,
      why: `${asked.map((a) => a.name).join(', ')} need${asked.length === 1 ? 's' : ''} a public name, which the holder of ${PROXY_SEAT} hands back, and nobody holds ${PROXY_SEAT} (ADR 0007)`,
      remedy: `assign the proxy first: mesh assign route-proxy NODE --hold ${PROXY_SEAT}`,
    });
  }
  if (domain === undefined) {
    problems.push({ what: assignment.node, why: `node ${assignment.node} has no public domain, so ${assignment.module}'s routes (${asked.map((a) => a.name).join(', ')}) have no public name`, remedy: `mesh node domain ${assignment.node} DOMAIN (e.g. example.org)` });
  }
  if (!proxy || domain === undefined) return { asks: [], problems };
  const asks = asksOf(assignment, manifest, domain);
  for (const ask of asks) {
    const claimed = claimantOf(state, ask.publicName, { ...assignment, name: ask.name });
    if (claimed) {
      problems.push({
        what: `route ${ask.route}${ask.name === ask.route ? '' : ` (redirect from ${ask.name})`}`,
        why: claimedWhy(ask.publicName, claimed),
        remedy: `unassign ${claimed.claimant.module} from ${claimed.claimant.node} first, or put ${assignment.module} on a node with another public domain`,
      });
      continue;
    }
    if (ask.publicName.length > 253) problems.push({ what: `route ${ask.route}`, why: `${ask.publicName} is ${ask.publicName.length} characters, and a DNS name is at most 253`, remedy: 'give the node a shorter public domain' });
  }
  return { asks, problems };
};

/**
 * Every name the mesh asks the holder of mesh-proxy for and it has not handed back under the
 * node's domain as it is: what the routes file lists as `asked`, and what a route waits on.
 */
export const routesAsked = (state: MeshState): Ask[] => {
  const asks: Ask[] = [];
  for (const assignment of allAssignments(state.assignments)) {
    const manifest = manifestOf(state.catalogue, assignment.module);
    const domain = nodeNamed(state.nodes, assignment.node)?.publicDomain;
    if (!manifest?.routes?.length || domain === undefined) continue;
    const current = currentGrantsOf(state, assignment);
    for (const ask of asksOf(assignment, manifest, domain)) if (!current.has(ask.name)) asks.push(ask);
  }
  return asks.sort((a, b) => (a.publicName < b.publicName ? -1 : a.publicName > b.publicName ? 1 : 0));
};

/** A public name the holder hands back is a DNS name under the node's public domain. */
const PUBLIC_NAME = /^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * The holder of mesh-proxy handing back the public name of one name a module's route asked for
 * (`answer-consumer` with requirement `route:<name>` and the value `publicName`): only the holder
 * answers, only a name the module asks for on a node with a public domain, a DNS name under that
 * domain, held by no other assignment.
 */
export const decideRouteAnswer = (
  state: MeshState,
  command: { provider: AssignmentRef; consumer: AssignmentRef; name: string; values: Record<string, string> },
): { events: EventOf<typeof PublicNameGranted>[]; problems: Problem[]; already: boolean } => {
  const { provider, consumer, name } = command;
  const problems: Problem[] = [];
  const proxy = proxyHolder(state);
  if (!proxy || proxy.node !== provider.node || proxy.module !== provider.module) {
    problems.push({ what: `${provider.node}/${provider.module}`, why: proxy ? `the holder of ${PROXY_SEAT} is ${proxy.node}/${proxy.module}, and only it hands back a public name` : `nobody holds ${PROXY_SEAT}, and only its holder hands back a public name`, remedy: `answer as the holder of ${PROXY_SEAT}` });
  }
  const assignment = assignmentOf(state.assignments, consumer);
  const manifest = assignment ? manifestOf(state.catalogue, consumer.module) : undefined;
  const asked = manifest ? namesAskedFor(manifest).find((a) => a.name === name) : undefined;
  const domain = nodeNamed(state.nodes, consumer.node)?.publicDomain;
  if (!assignment) problems.push({ what: `${consumer.node}/${consumer.module}`, why: 'no such assignment', remedy: 'answer a module that is assigned', missing: 'assignment' });
  else if (!asked) problems.push({ what: `route:${name}`, why: `${consumer.module} asks for no public name ${name}`, remedy: `the names it asks for: ${(manifest ? namesAskedFor(manifest) : []).map((a) => `route:${a.name}`).join(', ') || 'none'}` });
  else if (domain === undefined) problems.push({ what: consumer.node, why: `node ${consumer.node} has no public domain, so nothing is asked for under it`, remedy: `mesh node domain ${consumer.node} DOMAIN first` });
  const extra = Object.keys(command.values).filter((field) => field !== 'publicName');
  if (extra.length > 0) problems.push({ what: extra.join(', '), why: 'a public name is handed back as publicName, and nothing else', remedy: 'answer publicName=NAME' });
  const publicName = command.values.publicName;
  if (publicName === undefined) problems.push({ what: 'publicName', why: 'the answer names no public name', remedy: 'answer publicName=NAME' });
  else if (domain !== undefined && (!PUBLIC_NAME.test(publicName) || publicName.length > 253 || !publicName.endsWith(`.${domain}`))) {
    problems.push({ what: 'publicName', why: `"${publicName}" is not a DNS name under ${consumer.node}'s public domain ${domain}`, remedy: `hand back a name such as ${name}.${domain}` });
  } else if (publicName !== undefined) {
    const claimed = claimantOf(state, publicName, { ...consumer, name });
    if (claimed?.granted) problems.push({ what: 'publicName', why: claimedWhy(publicName, claimed), remedy: 'hand back another name' });
  }
  if (problems.length > 0 || !asked || publicName === undefined || !proxy) return { events: [], problems, already: false };
  if (grantsOf(state.routes, consumer).get(name)?.publicName === publicName) return { events: [], problems, already: true };
  return { events: [{ type: PublicNameGranted.type, data: { node: consumer.node, module: consumer.module, route: asked.route, name, publicName, proxy } }], problems, already: false };
};
