import { allAssignments, assignmentsOn } from '../domain/assignments/state.js';
import { graphInputOf } from '../domain/builds/decider.js';
import { moduleNamed, registeredModuleNames } from '../domain/catalogue/state.js';
import { statedRefusals } from '../domain/declarations/state.js';
import { allStatedHolds } from '../domain/facts/state.js';
import type { MeshState } from '../domain/mesh/state.js';
import { allNodes, nodeNamed } from '../domain/nodes/state.js';
import { allHoldings, allSeats, heldBy, seatById } from '../domain/seats/state.js';
import { grantsOf } from '../domain/routes/state.js';
import { publicNamesLine } from './public-names.js';
import { NotFoundError } from '../errors.js';
import type { GraphEdge, ProjectedGraph } from '../projections/mesh/graph.js';
import type { SeatRead } from '../projections/mesh/seats.js';
import { asOfData, asOfLine, type MeshAt } from './at.js';
import { proseLine, table, type Output } from './output.js';

// The reads `--at` answers, from the mesh as the log held it at a sequence (at.ts) rather than
// from the projections, in the shapes the projections' reads have, so each verb prints them as it
// prints the present. What the log does not hold — heartbeats, reports, what NODES published — is
// said to be not known then, never guessed from today.

export interface HoldingRead {
  seat_id: string;
  scope_key: string;
  node: string;
  module: string;
}

export const seatSetAt = (state: MeshState): SeatRead[] =>
  [...allSeats(state.seats)].map((seat) => ({
    id: seat.id,
    name: seat.name,
    aliases: [...seat.aliases],
    scope: seat.scope,
    delivers: seat.delivers,
    definer: seat.definer.kind === 'system' ? 'system' : 'module',
    definer_module: seat.definer.kind === 'module' ? seat.definer.module : null,
    protocol: seat.protocol,
  }));

export const holdingsAt = (state: MeshState): HoldingRead[] => [...allHoldings(state.seats)].map((h) => ({ seat_id: h.seat, scope_key: h.scopeKey, node: h.holder.node, module: h.holder.module }));

export const nodesAt = (state: MeshState): string[] => [...allNodes(state.nodes)].map((n) => n.name);

/** The module graph as the builds slice held it: each module's newest version built on its bases, and who produced each base. */
export const graphAt = (state: MeshState): ProjectedGraph => {
  const input = graphInputOf(state);
  const producers = new Map<string, Set<string>>();
  for (const version of input.builds.versions.values()) producers.set(version.digest, (producers.get(version.digest) ?? new Set()).add(version.module));
  const edges: GraphEdge[] = [...input.builds.latest.values()]
    .flatMap((version) => [...new Map(version.bases.map((base) => [base.name, base])).values()].map((base) => ({ source: version.module, target: base.name, targetDigest: base.digest, producers: [...(producers.get(base.digest) ?? [])].sort() })))
    .sort((a, b) => (a.source === b.source ? (a.target < b.target ? -1 : 1) : a.source < b.source ? -1 : 1));
  return { input, edges };
};

const notKnownThen = 'what the machine said (heartbeats, reports) and the declarations published are not in the log: not known as of then';

export const moduleShowAt = (out: Output, mesh: MeshAt, name: string): number => {
  const module = moduleNamed(mesh.state.catalogue, name);
  if (!module) {
    const known = [...registeredModuleNames(mesh.state.catalogue)].sort();
    throw new NotFoundError(`no module ${name} was registered as of sequence ${mesh.seq} (registered then: ${known.join(', ') || 'none'})`, { field: 'module', module: name, seq: mesh.seq });
  }
  const shown = { name: module.name, definitionVersion: module.definitionVersion, digest: module.digest, manifest: module.manifest };
  if (out.json) out.data({ ...asOfData(mesh), ...shown });
  else {
    out.line(asOfLine(mesh));
    out.line(JSON.stringify(shown, null, 2));
  }
  return 0;
};

export const nodeShowAt = (out: Output, mesh: MeshAt, name: string): number => {
  const { state } = mesh;
  const node = nodeNamed(state.nodes, name);
  if (!node) {
    throw new NotFoundError(`no node ${name} in the mesh as of sequence ${mesh.seq} (nodes then: ${nodesAt(state).sort().join(', ') || 'none'}); \`mesh history node.${name}\` says when it came or went`, { node: name, seq: mesh.seq });
  }
  const assignments = assignmentsOn(state.assignments, name).sort((a, b) => (a.module < b.module ? -1 : 1));
  const seats = assignments.flatMap((a) => heldBy(state.seats, { node: name, module: a.module }).map((h) => ({ seat: seatById(state.seats, h.seat)?.name ?? h.seat, module: a.module })));
  const held = [...allStatedHolds(state.facts)].filter((h) => h.node === name).map(({ module, resource, kind, reason, since }) => ({ module, resource, kind, reason, since }));
  const shown = {
    node: node.name,
    root: node.root,
    address: node.address,
    enrolled: node.publicKey !== undefined,
    cordoned: node.cordoned === true,
    assignments: assignments.map((a) => ({ module: a.module, definitionVersion: a.definitionVersion })),
    seats,
    publicDomain: node.publicDomain ?? null,
    publicNames: assignments
      .flatMap((a) => [...grantsOf(state.routes, a).values()])
      .map((g) => ({ publicName: g.publicName, module: g.module, route: g.route, redirect: g.name !== g.route }))
      .sort((a, b) => (a.publicName < b.publicName ? -1 : 1)),
    held,
    machine: null,
    notKnown: [notKnownThen],
  };
  if (out.json) {
    out.data({ ...asOfData(mesh), ...shown });
    return 0;
  }
  proseLine(out, asOfLine(mesh));
  proseLine(out, `node ${shown.node}: root ${shown.root}${shown.address ? `, reached at ${shown.address}` : ''}, ${shown.enrolled ? 'enrolled' : 'not enrolled (no agent had joined as it)'}`);
  if (shown.cordoned) proseLine(out, 'cordoned: it took no new assignment');
  proseLine(out, `runs: ${shown.assignments.map((a) => `${a.module} (definition v${a.definitionVersion})`).join(', ') || 'nothing'}`);
  proseLine(out, `seats it holds: ${shown.seats.map((h) => `${h.seat} (by ${h.module})`).join(', ') || 'none'}`);
  proseLine(out, publicNamesLine(shown.node, shown.publicDomain, shown.publicNames));
  proseLine(out, shown.held.length > 0 ? `held back (${shown.held.length}):` : 'held back: nothing');
  for (const h of shown.held) proseLine(out, `  ${h.module}: ${h.resource} (${h.kind}): ${h.reason ?? 'no reason given'} — since ${h.since.time} (log seq ${h.since.seq})`);
  proseLine(out, `not known: ${notKnownThen}`);
  return 0;
};

/**
 * `mesh status --at`: what the log said the mesh was told then — nodes and what they were
 * assigned, unheld mesh seats, declarations refused, what was held. Whether the machines did it is
 * not in the log, so health is not judged: it answers 0.
 */
export const statusAt = (out: Output, mesh: MeshAt): number => {
  const { state } = mesh;
  const assigned = new Map<string, string[]>();
  for (const a of allAssignments(state.assignments)) assigned.set(a.node, [...(assigned.get(a.node) ?? []), a.module].sort());
  const nodes = [...allNodes(state.nodes)].sort((a, b) => (a.name < b.name ? -1 : 1)).map((n) => ({ node: n.name, enrolled: n.publicKey !== undefined, cordoned: n.cordoned === true, modules: assigned.get(n.name) ?? [] }));
  const heldSeats = new Set([...allHoldings(state.seats)].filter((h) => h.scopeKey === 'mesh').map((h) => h.seat));
  const unheld = [...allSeats(state.seats)].filter((s) => s.scope === 'mesh' && !heldSeats.has(s.id)).map((s) => s.name).sort();
  const refusals = [...statedRefusals(state.declarations)].map(([node, r]) => ({ node, seq: r.seq, derivedFromSeq: r.derivedFromSeq, reason: r.reason }));
  const held = [...allStatedHolds(state.facts)].map(({ node, module, resource, reason }) => ({ node, module, resource, reason }));
  const unknown = [notKnownThen, 'the projections are of the present: not shown'];
  if (out.json) {
    out.data({ ...asOfData(mesh), nodes, unheldSeats: unheld, refusals, held, unknown });
    return 0;
  }
  proseLine(out, asOfLine(mesh));
  if (nodes.length === 0) out.line('nodes: none');
  else {
    out.line('nodes:');
    table(out, ['NODE', 'AGENT', 'STATE', 'ASSIGNED'], nodes.map((n) => [n.node, n.enrolled ? 'enrolled' : 'not enrolled', n.cordoned ? 'cordoned' : 'ready', n.modules.join(', ') || '(nothing assigned)']), { indent: 2 });
  }
  proseLine(out, `mesh seats unheld: ${unheld.join(', ') || 'none'}`);
  if (refusals.length > 0) out.line('declarations refused (stated by then):');
  for (const r of refusals) proseLine(out, `  ${r.node} at seq ${r.seq}: ${r.reason}`);
  if (held.length > 0) out.line('held back (stated by then):');
  for (const h of held) proseLine(out, `  ${h.node}/${h.module} ${h.resource}: ${h.reason ?? 'no reason given'}`);
  out.line('not known:');
  for (const u of unknown) proseLine(out, `  ${u}`);
  return 0;
};
