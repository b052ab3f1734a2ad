import { ValidationError } from '../errors.js';
import type { AssignmentRef } from '../domain/seats/events.js';
import { output, table, type Output } from './output.js';
import { atLeastFlag, withReads } from './reads.js';
import { findSeat, holderAt, readHoldings, readSeatSet, type SeatRead } from '../projections/mesh/seats.js';
import { asOfData, asOfLine, atFlag, withMeshAt, type AsOf } from './at.js';
import type { HoldingRead } from './at-reads.js';
import { nodeNames } from '../projections/mesh/nodes.js';

// mesh seats | mesh seat handover SEAT --to NODE/MODULE [--from NODE/MODULE|none] | mesh seat rename SEAT NEW

export const assignmentRefFlag = (flag: string, value: string): AssignmentRef => {
  const match = /^([a-z][a-z0-9-]*)\/([a-z][a-z0-9-]*)$/.exec(value);
  if (!match) throw new ValidationError(`${flag} "${value}" is not NODE/MODULE`, { field: flag });
  return { node: match[1] ?? '', module: match[2] ?? '' };
};

/**
 * Who holds `seat` (by its name or a former one) where a handover to a module on `node` would take
 * it — the mesh for a mesh seat, that node for a node seat — as the seats projection says now; none
 * for a seat not in the set (the controller refuses that handover, naming it).
 */
const currentHolder = (seat: string, node: string): Promise<AssignmentRef | null> =>
  withReads(['seats'], {}, async (session) => {
    const found = await findSeat(session, seat);
    return found ? ((await holderAt(session, found.id, found.scope === 'mesh' ? 'mesh' : node)) ?? null) : null;
  });


export const seatsCommand = (values: { json?: true; atLeast?: string; output?: string; at?: string }): Promise<number> => {
  const out = output(values.json ?? false, values.output);
  const at = atFlag(values.at);
  if (at) {
    return withMeshAt(at, async (mesh) => {
      const { holdingsAt, nodesAt, seatSetAt } = await import('./at-reads.js');
      return printSeats(out, seatSetAt(mesh.state), holdingsAt(mesh.state), nodesAt(mesh.state), mesh);
    });
  }
  return withReads(['seats', 'nodes'], { atLeast: atLeastFlag(values.atLeast) }, async (session) => printSeats(out, await readSeatSet(session), await readHoldings(session), await nodeNames(session)));
};

/** The seat set and its holders, as `mesh seats` prints them; `asOf` heads an answer about the past. */
const printSeats = (out: Output, seatSet: readonly SeatRead[], holdings: readonly HoldingRead[], nodeList: readonly string[], asOf?: AsOf): number => {
  const seats = [...seatSet].sort((a, b) => (a.scope === b.scope ? a.name.localeCompare(b.name) : a.scope === 'mesh' ? -1 : 1));
  const nodes = [...nodeList].sort((a, b) => a.localeCompare(b));
  const heldBy = (seat: string, scopeKey: string): AssignmentRef | undefined => {
    const held = holdings.find((h) => h.seat_id === seat && h.scope_key === scopeKey);
    return held ? { node: held.node, module: held.module } : undefined;
  };
  const rows = seats.flatMap((seat) => {
    const base = { seat: seat.name, aliases: seat.aliases, scope: seat.scope, delivers: seat.delivers, definer: seat.definer === 'system' ? 'mesh' : (seat.definer_module ?? ''), protocol: seat.protocol };
    if (seat.scope === 'mesh') return [{ ...base, holder: heldBy(seat.id, 'mesh') ?? null }];
    const held = nodes.flatMap((node) => {
      const holder = heldBy(seat.id, node);
      return holder ? [{ ...base, holder }] : [];
    });
    return held.length > 0 ? held : [{ ...base, holder: null }];
  });
  // A holding whose seat has left the set (its declarer dropped it) is shown, never hidden.
  const inSet = new Set(seats.map((s) => s.id));
  const outside = holdings
    .filter((h) => !inSet.has(h.seat_id))
    .map((h) => ({ seat: h.seat_id, aliases: [] as string[], scope: h.scope_key === 'mesh' ? 'mesh' : 'node', delivers: null, definer: 'outside the set', protocol: null, holder: { node: h.node, module: h.module } }));
  if (out.json) {
    out.data({ ...(asOf ? asOfData(asOf) : {}), seats: rows, outsideTheSet: outside });
    return 0;
  }
  if (asOf) out.line(asOfLine(asOf));
  const holderOf = (row: (typeof rows)[number]): string => (row.holder ? `${row.holder.node}/${row.holder.module}` : row.scope === 'node' ? 'unheld on every node' : 'unheld');
  table(out, ['SEAT', 'SCOPE', 'DELIVERS', 'DECLARED BY', 'HOLDER'], [
    ...rows.map((row) => [row.aliases.length > 0 ? `${row.seat} (was ${row.aliases.join(', ')})` : row.seat, row.scope, row.delivers ?? 'nothing', row.definer, holderOf(row)]),
    ...outside.map((row) => [row.seat, row.scope, 'not known', 'outside the set', `${row.holder.node}/${row.holder.module}`]),
  ]);
  return 0;
};

export const seatHandover = async (seat: string, values: { json?: true; to: string; from?: string; commandId?: string; plan?: true }): Promise<number> => {
  const out = output(values.json ?? false);
  const to = assignmentRefFlag('--to', values.to);
  // The holder this operator is handing over from: given, or as the mesh is now.
  const expectedHolder = values.from !== undefined ? (values.from === 'none' ? null : assignmentRefFlag('--from', values.from)) : await currentHolder(seat, to.node);
  // A command's machinery is loaded by the commands alone, not by `mesh seats`.
  const { printResult, withMesh } = await import('./mesh-session.js');
  return withMesh(async ({ mesh, metadata }) => printResult(out, await mesh.execute({ type: 'hand-over-seat', seat, to, expectedHolder }, metadata(values.commandId))), { plan: values.plan });
};

export const seatRename = async (seat: string, newName: string, values: { json?: true; commandId?: string; plan?: true }): Promise<number> => {
  const { printResult, withMesh } = await import('./mesh-session.js');
  return withMesh(async ({ mesh, metadata }) => printResult(output(values.json ?? false), await mesh.execute({ type: 'rename-seat', seat, to: newName }, metadata(values.commandId))), { plan: values.plan });
};
