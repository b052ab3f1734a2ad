import { ValidationError } from '../errors.js';
import type { AssignmentRef } from '../domain/seats/events.js';
import { parseFlags } from './flags.js';
import { printResult, withMesh } from './mesh-session.js';
import { output } from './output.js';
import { atLeastFlag, withReads } from './reads.js';
import { findSeat, holderAt, readHoldings, readSeatSet } from '../projections/mesh/seats.js';
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

export const seatsCommand = async (args: string[]): Promise<number> => {
  const { values } = parseFlags(args, { json: { type: 'boolean', default: false }, 'at-least': { type: 'string' } });
  const out = output(values.json ?? false);
  return withReads(['seats', 'nodes'], { atLeast: atLeastFlag(values['at-least']) }, async (session) => {
    const seats = (await readSeatSet(session)).sort((a, b) => (a.scope === b.scope ? a.name.localeCompare(b.name) : a.scope === 'mesh' ? -1 : 1));
    const holdings = await readHoldings(session);
    const nodes = (await nodeNames(session)).sort((a, b) => a.localeCompare(b));
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
      out.data({ seats: rows, outsideTheSet: outside });
      return 0;
    }
    out.line(`${'SEAT'.padEnd(28)} ${'SCOPE'.padEnd(6)} ${'DELIVERS'.padEnd(22)} ${'DECLARED BY'.padEnd(16)} HOLDER`);
    for (const row of rows) {
      const holder = row.holder ? `${row.holder.node}/${row.holder.module}` : row.scope === 'node' ? 'unheld on every node' : 'unheld';
      const name = row.aliases.length > 0 ? `${row.seat} (was ${row.aliases.join(', ')})` : row.seat;
      out.line(`${name.padEnd(28)} ${row.scope.padEnd(6)} ${(row.delivers ?? '-').padEnd(22)} ${row.definer.padEnd(16)} ${holder}`);
    }
    for (const row of outside) {
      out.line(`${row.seat.padEnd(28)} ${row.scope.padEnd(6)} ${'-'.padEnd(22)} ${'outside the set'.padEnd(16)} ${row.holder.node}/${row.holder.module}`);
    }
    return 0;
  });
};

export const seatCommand = async (args: string[]): Promise<number> => {
  const { values, positionals } = parseFlags(
    args,
    { json: { type: 'boolean', default: false }, to: { type: 'string' }, from: { type: 'string' }, 'command-id': { type: 'string' } },
    3,
  );
  const out = output(values.json ?? false);
  const [sub, seat, newName] = positionals;
  switch (sub) {
    case 'handover': {
      if (!seat || !values.to) throw new ValidationError('usage: mesh seat handover SEAT --to NODE/MODULE [--from NODE/MODULE|none]', { field: seat ? '--to' : 'seat' });
      const to = assignmentRefFlag('--to', values.to);
      // The holder this operator is handing over from: given, or as the mesh is now.
      const expectedHolder = values.from !== undefined ? (values.from === 'none' ? null : assignmentRefFlag('--from', values.from)) : await currentHolder(seat, to.node);
      return withMesh(async ({ mesh, metadata }) => printResult(out, await mesh.execute({ type: 'hand-over-seat', seat, to, expectedHolder }, metadata(values['command-id']))));
    }
    case 'rename': {
      if (!seat || !newName) throw new ValidationError('usage: mesh seat rename SEAT NEW-NAME', { field: seat ? 'new-name' : 'seat' });
      return withMesh(async ({ mesh, metadata }) => printResult(out, await mesh.execute({ type: 'rename-seat', seat, to: newName }, metadata(values['command-id']))));
    }
    default:
      throw new ValidationError(`mesh seat needs one of: handover, rename (got ${sub ?? 'nothing'})`, { field: 'verb' });
  }
};
