import type { EventOf } from '../events/registry.js';
import type { Manifest } from '../catalogue/manifest.js';
import type { MeshState } from '../mesh/state.js';
import type { Problem } from '../refusal.js';
import type { AssignmentRef } from '../seats/events.js';
import { holderOf, seatNamed } from '../seats/state.js';
import { PublicNameGranted } from './events.js';
import { grantsOf, holderOfPublicName } from './state.js';

// ADR 0007: the holder of mesh-proxy hands back each name a module's routes ask for, as
// `<name>.<the node's public domain>`. A public name has one holder across the mesh (R112.11): a
// second claim is refused naming the first.

export const PROXY_SEAT = 'mesh-proxy';

/** The names a manifest's routes ask for: each route's own, and each redirect's `from`. */
export const namesAskedFor = (manifest: Manifest): { route: string; name: string }[] =>
  (manifest.routes ?? []).flatMap((route) => [{ route: route.name, name: route.name }, ...route.policy.flatMap((p) => (p.kind === 'redirect' ? [{ route: route.name, name: p.from }] : []))]);

/** The holder of mesh-proxy, if the mesh has the seat and someone holds it. */
export const proxyHolder = (state: MeshState): AssignmentRef | undefined => {
  const seat = seatNamed(state.seats, PROXY_SEAT);
  return seat ? holderOf(state.seats, seat.id, 'mesh') : undefined;
};

/**
 * The grants for `assignment`'s routes under `domain`, or why they cannot be made. `previous` is
 * the proxy of grants made before, which hands back the new names when the seat is unheld now;
 * with none (`skip`), a domain change grants nothing and the routes wait, named, at composition.
 */
export const grantRoutes = (
  state: MeshState,
  assignment: AssignmentRef,
  manifest: Manifest,
  domain: string | undefined,
  options: { whenNoProxy: 'refuse' | 'skip' } = { whenNoProxy: 'refuse' },
): { events: EventOf<typeof PublicNameGranted>[]; problems: Problem[] } => {
  const asked = namesAskedFor(manifest);
  if (asked.length === 0) return { events: [], problems: [] };
  const problems: Problem[] = [];
  const previous = [...grantsOf(state.routes, assignment).values()][0]?.proxy;
  const proxy = proxyHolder(state) ?? previous;
  if (!proxy && options.whenNoProxy === 'skip') return { events: [], problems: [] };
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
  if (!proxy || domain === undefined) return { events: [], problems };
  const events: EventOf<typeof PublicNameGranted>[] = [];
  for (const { route, name } of asked) {
    const publicName = `${name}.${domain}`;
    const holder = holderOfPublicName(state.routes, publicName);
    if (holder && !(holder.node === assignment.node && holder.module === assignment.module && holder.name === name)) {
      problems.push({
        what: `route ${route}${name === route ? '' : ` (redirect from ${name})`}`,
        why: `the public name ${publicName} is held by ${holder.node}/${holder.module} (route ${holder.route}); a public name has one holder across the mesh`,
        remedy: `unassign ${holder.module} from ${holder.node} first, or put ${assignment.module} on a node with another public domain`,
      });
      continue;
    }
    if (publicName.length > 253) {
      problems.push({ what: `route ${route}`, why: `${publicName} is ${publicName.length} characters, and a DNS name is at most 253`, remedy: 'give the node a shorter public domain' });
      continue;
    }
    events.push({ type: PublicNameGranted.type, data: { node: assignment.node, module: assignment.module, route, name, publicName, proxy } });
  }
  return { events, problems };
};
