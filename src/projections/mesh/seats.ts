import type { SeatDeclaration } from '../../domain/catalogue/manifest.js';
import type { StoredMeshEvent } from '../../domain/registry.js';
import { foldingProjection } from './folding.js';
import type { ProjectionTx } from '../projection.js';
import type { ReadViews } from './read-views.js';
import { RowImage, replaceRows } from './rows.js';

// `seats` with `seat_aliases`, and `holdings`, as evolveMesh folds them. The set of seats is the
// mesh's own (seat.defined) and those module definitions declare: module.registered restates its
// module's seats and takes out of the set those it no longer declares. A seat keeps its id (its
// first name) through renames, the old names staying as aliases. Holdings are keyed by seat id
// and scope key and outlive a seat that left the set.

export interface SeatRecord {
  id: string;
  name: string;
  aliases: string[];
  scope: 'mesh' | 'node';
  delivers: string | null;
  reserved: boolean;
  decided: string;
  definer: 'system' | 'module';
  definer_module: string | null;
  protocol: { accepts: { verb: string; retain: string }[]; emits: string[]; serves: string[] };
  changed_seq: number;
}

interface Batch {
  /** every seat, read when the batch changes the set; undefined when it only moves holdings */
  seats: Map<string, SeatRecord> | undefined;
  changedSeats: Set<string>;
  holdings: RowImage<{ seat_id: string; scope_key: string; node: string; module: string; since_seq: number | string }>;
}

const SET_CHANGES = new Set(['seat.defined', 'seat.renamed', 'module.registered']);

/** A seat by its name or any former name (evolveMesh's seatNamed). */
const seatNamed = (seats: Map<string, SeatRecord>, name: string): SeatRecord | undefined => {
  for (const seat of seats.values()) if (seat.name === name || seat.aliases.includes(name)) return seat;
  return undefined;
};

const loadSeats = async (tx: ProjectionTx): Promise<Map<string, SeatRecord>> => {
  const aliases = new Map<string, string[]>();
  const aliasRows = await tx.client.query<{ seat_id: string; alias: string }>(`SELECT seat_id, alias FROM ${tx.table('seat_aliases')} ORDER BY seat_id, position`);
  for (const row of aliasRows.rows) aliases.set(row.seat_id, [...(aliases.get(row.seat_id) ?? []), row.alias]);
  const seats = new Map<string, SeatRecord>();
  const rows = await tx.client.query<Omit<SeatRecord, 'aliases' | 'changed_seq'> & { changed_seq: string }>(`SELECT * FROM ${tx.table('seats')} ORDER BY changed_seq, id`);
  for (const row of rows.rows) seats.set(row.id, { ...row, changed_seq: Number(row.changed_seq), aliases: aliases.get(row.id) ?? [] });
  return seats;
};

const declaredSeat = (module: string, declaration: SeatDeclaration, existing: SeatRecord | undefined, seq: number): SeatRecord => ({
  id: existing?.id ?? declaration.name,
  name: existing?.name ?? declaration.name,
  aliases: existing?.aliases ?? [],
  scope: declaration.scope,
  delivers: null,
  reserved: false,
  decided: `declared by module ${module}`,
  protocol: { accepts: declaration.accepts, emits: declaration.emits, serves: declaration.serves },
  definer: 'module',
  definer_module: module,
  changed_seq: seq,
});

const changeSet = (batch: Batch, event: StoredMeshEvent): void => {
  const seats = batch.seats as Map<string, SeatRecord>;
  const put = (seat: SeatRecord): void => {
    seats.set(seat.id, seat);
    batch.changedSeats.add(seat.id);
  };
  switch (event.type) {
    case 'seat.defined': {
      const data = event.data;
      put({ id: data.seat, name: data.name, aliases: [], scope: data.scope, delivers: data.delivers, reserved: data.reserved, decided: data.decided, protocol: data.protocol, definer: 'system', definer_module: null, changed_seq: event.seq });
      break;
    }
    case 'seat.renamed': {
      const data = event.data;
      const seat = seats.get(data.seat);
      if (seat) put({ ...seat, aliases: [...seat.aliases.filter((a) => a !== data.to), data.from], name: data.to, changed_seq: event.seq });
      break;
    }
    case 'module.registered': {
      const data = event.data;
      const declared = new Set<string>();
      for (const declaration of data.manifest.seats) {
        const seat = declaredSeat(data.module, declaration, seatNamed(seats, declaration.name), event.seq);
        put(seat);
        declared.add(seat.id);
      }
      // A seat its module no longer declares leaves the set with it. Every seat a module defines
      // was named by its previous definition, so "defined by this module" is that set.
      for (const seat of [...seats.values()]) {
        if (seat.definer === 'module' && seat.definer_module === data.module && !declared.has(seat.id)) {
          seats.delete(seat.id);
          batch.changedSeats.add(seat.id);
        }
      }
      break;
    }
    default:
      break;
  }
};

export const seatsProjection = foldingProjection<Batch>({
  name: 'seats',
  version: 1,
  types: ['seat.defined', 'seat.renamed', 'module.registered', 'seat.held', 'seat.handed-over', 'seat.released'],
  open: async (events, tx) => {
    const holdings = new RowImage<{ seat_id: string; scope_key: string; node: string; module: string; since_seq: number | string }>('holdings', ['seat_id', 'scope_key']);
    await holdings.load(
      tx,
      events.flatMap((e) => (e.type === 'seat.released' ? [{ seat_id: e.data.seat, scope_key: e.data.scopeKey }] : [])),
    );
    const seats = events.some((e) => SET_CHANGES.has(e.type)) ? await loadSeats(tx) : undefined;
    return { seats, changedSeats: new Set(), holdings };
  },
  apply: (batch, event) => {
    if (SET_CHANGES.has(event.type)) return changeSet(batch, event);
    switch (event.type) {
      case 'seat.held':
      case 'seat.handed-over': {
        const data = event.data;
        const to = event.type === 'seat.handed-over' ? event.data.to : event.data;
        batch.holdings.set({ seat_id: data.seat, scope_key: data.scopeKey, node: to.node, module: to.module, since_seq: event.seq });
        break;
      }
      case 'seat.released': {
        const data = event.data;
        const holder = batch.holdings.get({ seat_id: data.seat, scope_key: data.scopeKey });
        if (holder && holder.node === data.node && holder.module === data.module) batch.holdings.delete({ seat_id: data.seat, scope_key: data.scopeKey });
        break;
      }
      default:
        break;
    }
  },
  save: async (batch, tx) => {
    await batch.holdings.save(tx);
    if (!batch.seats || batch.changedSeats.size === 0) return;
    const ids = [...batch.changedSeats];
    const kept = ids.flatMap((id) => {
      const seat = batch.seats?.get(id);
      return seat ? [seat] : [];
    });
    await replaceRows(
      tx,
      'seats',
      ['id'],
      ids.map((id) => ({ id })),
      kept.map(({ aliases: _aliases, ...row }) => row),
    );
    await replaceRows(
      tx,
      'seat_aliases',
      ['seat_id'],
      ids.map((seat_id) => ({ seat_id })),
      kept.flatMap((seat) => seat.aliases.map((alias, position) => ({ seat_id: seat.id, position, alias }))),
    );
  },
});

/** A seat of the set as readers see it: its names, scope, what it delivers and who declared it. */
export interface SeatRead {
  id: string;
  name: string;
  aliases: string[];
  scope: 'mesh' | 'node';
  delivers: string | null;
  definer: string;
  definer_module: string | null;
  protocol: unknown;
}

/** Every seat of the set, with its former names oldest first. */
export const readSeatSet = async ({ db, view }: ReadViews): Promise<SeatRead[]> =>
  (
    await db.query<SeatRead>(
      `SELECT s.id, s.name, s.scope, s.delivers, s.definer, s.definer_module, s.protocol,
              coalesce((SELECT array_agg(a.alias ORDER BY a.position) FROM ${view('seat_aliases')} a WHERE a.seat_id = s.id), '{}') AS aliases
         FROM ${view('seats')} s`,
    )
  ).rows;

/** Every holding, oldest first: a seat's id, the scope key it is held at, and the holder. */
export const readHoldings = async ({ db, view }: ReadViews): Promise<{ seat_id: string; scope_key: string; node: string; module: string }[]> =>
  (await db.query<{ seat_id: string; scope_key: string; node: string; module: string }>(`SELECT seat_id, scope_key, node, module FROM ${view('holdings')} ORDER BY since_seq`)).rows;

/** The seats one node's modules hold, by seat name (its id when it left the set). */
export const holdingsOf = async ({ db, view }: ReadViews, node: string): Promise<{ seat: string; module: string }[]> =>
  (
    await db.query<{ seat: string; module: string }>(
      `SELECT coalesce(s.name, h.seat_id) AS seat, h.module FROM ${view('holdings')} h LEFT JOIN ${view('seats')} s ON s.id = h.seat_id WHERE h.node = $1 ORDER BY 1`,
      [node],
    )
  ).rows;

/** The mesh-scoped seats of the set nobody holds, by name. */
export const unheldMeshSeats = async ({ db, view }: ReadViews): Promise<string[]> =>
  (
    await db.query<{ name: string }>(
      `SELECT s.name FROM ${view('seats')} s WHERE s.scope = 'mesh' AND NOT EXISTS (SELECT 1 FROM ${view('holdings')} h WHERE h.seat_id = s.id AND h.scope_key = 'mesh') ORDER BY s.name`,
    )
  ).rows.map((r) => r.name);

/** A seat of the set by its name or any former name (evolveMesh's seatNamed), the current name first. */
export const findSeat = async ({ db, view }: ReadViews, name: string): Promise<{ id: string; scope: 'mesh' | 'node' } | undefined> =>
  (
    await db.query<{ id: string; scope: 'mesh' | 'node' }>(
      `SELECT s.id, s.scope FROM ${view('seats')} s
        WHERE s.name = $1 OR EXISTS (SELECT 1 FROM ${view('seat_aliases')} a WHERE a.seat_id = s.id AND a.alias = $1)
        ORDER BY s.name = $1 DESC, s.changed_seq, s.id LIMIT 1`,
      [name],
    )
  ).rows[0];

/** Who holds a seat at a scope key (`mesh`, or a node's name), if anyone. */
export const holderAt = async ({ db, view }: ReadViews, seatId: string, scopeKey: string): Promise<{ node: string; module: string } | undefined> =>
  (await db.query<{ node: string; module: string }>(`SELECT node, module FROM ${view('holdings')} WHERE seat_id = $1 AND scope_key = $2`, [seatId, scopeKey])).rows[0];
