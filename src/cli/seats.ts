import { ValidationError } from '../errors.js';
import { holderOf } from '../domain/mesh/state.js';
import type { AssignmentRef } from '../domain/seats/events.js';
import { parseFlags } from './flags.js';
import { printResult, withMesh } from './mesh-session.js';
import { output } from './output.js';

// mesh seats | mesh seat handover SEAT --to NODE/MODULE [--from NODE/MODULE|none] | mesh seat rename SEAT NEW

export const assignmentRefFlag = (flag: string, value: string): AssignmentRef => {
  const match = /^([a-z][a-z0-9-]*)\/([a-z][a-z0-9-]*)$/.exec(value);
  if (!match) throw new ValidationError(`${flag} "${value}" is not NODE/MODULE`, { field: flag });
  return { node: match[1] ?? '', module: match[2] ?? '' };
};

export const seatsCommand = async (args: string[]): Promise<number> => {
  const { values } = parseFlags(args, { json: { type: 'boolean', default: false } });
  const out = output(values.json ?? false);
  return withMesh(async ({ mesh }) => {
    const state = await mesh.current();
    const rows = [...state.seats.values()]
      .sort((a, b) => (a.scope === b.scope ? a.name.localeCompare(b.name) : a.scope === 'mesh' ? -1 : 1))
      .flatMap((seat) => {
        const base = { seat: seat.name, aliases: seat.aliases, scope: seat.scope, delivers: seat.delivers, definer: seat.definer.kind === 'system' ? 'mesh' : seat.definer.module, protocol: seat.protocol };
        if (seat.scope === 'mesh') return [{ ...base, holder: holderOf(state, seat.id, 'mesh') ?? null }];
        const held = [...state.nodes.keys()].sort().flatMap((node) => {
          const holder = holderOf(state, seat.id, node);
          return holder ? [{ ...base, holder }] : [];
        });
        return held.length > 0 ? held : [{ ...base, holder: null }];
      });
    // A holding whose seat has left the set (its declarer dropped it) is shown, never hidden.
    const outside = [...state.holdings.entries()]
      .filter(([key]) => !state.seats.has(key.split('@')[0] ?? ''))
      .map(([key, holder]) => {
        const [seat = '', scopeKey = ''] = key.split('@');
        return { seat, aliases: [] as string[], scope: scopeKey === 'mesh' ? 'mesh' : 'node', delivers: null, definer: 'outside the set', protocol: null, holder };
      });
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
      return withMesh(async ({ mesh, metadata }) => {
        // The holder this operator is handing over from: given, or as the mesh is now.
        let expectedHolder: AssignmentRef | null;
        if (values.from !== undefined) expectedHolder = values.from === 'none' ? null : assignmentRefFlag('--from', values.from);
        else {
          const state = await mesh.current();
          const found = [...state.seats.values()].find((s) => s.name === seat || s.aliases.includes(seat));
          expectedHolder = found ? (holderOf(state, found.id, found.scope === 'mesh' ? 'mesh' : to.node) ?? null) : null;
        }
        return printResult(out, await mesh.execute({ type: 'hand-over-seat', seat, to, expectedHolder }, metadata(values['command-id'])));
      });
    }
    case 'rename': {
      if (!seat || !newName) throw new ValidationError('usage: mesh seat rename SEAT NEW-NAME', { field: seat ? 'new-name' : 'seat' });
      return withMesh(async ({ mesh, metadata }) => printResult(out, await mesh.execute({ type: 'rename-seat', seat, to: newName }, metadata(values['command-id']))));
    }
    default:
      throw new ValidationError(`mesh seat needs one of: handover, rename (got ${sub ?? 'nothing'})`, { field: 'verb' });
  }
};
