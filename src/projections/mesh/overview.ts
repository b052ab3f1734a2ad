import { sourceKey } from '../../domain/builds/events.js';
import type { OverviewMesh } from '../../controller/overview.js';
import { readAssignedModules } from './assignments.js';
import { readSourceHeads } from './builds.js';
import { readBuildStandings } from './build-standing.js';
import { readEventLinks } from './event-links.js';
import { readRefusals } from './declarations.js';
import { readNodeHolds } from './holds.js';
import { readModuleSources } from './modules.js';
import { readNodeAddresses } from './nodes.js';
import type { ReadViews } from './read-views.js';
import { readHoldings, readSeatSet } from './seats.js';

// The mesh as the overview judges it, read from the projections instead of a fold of the log:
// its cost follows the size of the mesh, not the length of its history.

/** The projections the overview is read from. */
export const OVERVIEW_PROJECTIONS = ['nodes', 'assignments', 'seats', 'modules', 'builds', 'declarations', 'holds'] as const;

export const readOverviewMesh = async (views: ReadViews, prefix = 'mesh'): Promise<OverviewMesh> => {
  const [nodes, assignments, seats, holdings, sources, heads, refusals, builds, holds, links] = await Promise.all([
    readNodeAddresses(views),
    readAssignedModules(views),
    readSeatSet(views),
    readHoldings(views),
    readModuleSources(views),
    readSourceHeads(views),
    readRefusals(views),
    readBuildStandings(views),
    readNodeHolds(views),
    readEventLinks(views, prefix),
  ]);
  return {
    nodes,
    assignments,
    seats: seats.map((seat) => ({ id: seat.id, name: seat.name, scope: seat.scope, delivers: seat.delivers })),
    holdings: holdings.map((h) => ({ seatId: h.seat_id, scopeKey: h.scope_key, node: h.node, module: h.module })),
    sources: sources.map(({ module, source }) => ({ module, key: sourceKey(source, source.ref) })),
    heads,
    refusals: new Map(refusals.map((r) => [r.node, { seq: r.seq, derivedFromSeq: r.derivedFromSeq }])),
    builds,
    holds,
    dangling: links.dangling,
  };
};

/**
 * What the overview cannot say for want of a projection, and what it cannot say of a node no agent
 * has joined as: `mesh status` and the console list these under "not known" (absence is not health).
 */
export const notKnownFromProjections = (serving: (projection: string) => boolean, nodes: readonly { name: string; enrolled: boolean }[]): string[] => {
  const unknown: string[] = [];
  if (!serving('nodes')) unknown.push('which nodes there are: the nodes projection is not built');
  for (const node of nodes) if (!node.enrolled) unknown.push(`what runs on ${node.name}: no agent has enrolled as it, so nothing reports from it`);
  if (!serving('seats')) unknown.push('who holds which seat: the seats projection is not built');
  if (!serving('declarations')) unknown.push('whether any declaration was refused: the declarations projection is not built');
  const missing = OVERVIEW_PROJECTIONS.filter((name) => !serving(name));
  if (missing.length > 0) unknown.push(`what the machines are doing: the ${missing.join(', ')} projection${missing.length > 1 ? 's are' : ' is'} not built`);
  return unknown;
};
