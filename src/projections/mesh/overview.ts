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
