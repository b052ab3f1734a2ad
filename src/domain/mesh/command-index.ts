// Which commands the log holds, so a retried command is answered, not repeated — in memory bounded
// by how many commands are recent, not by the log's length. The newest commands are kept exactly,
// with where they landed; older ones only as bits of a Bloom filter, which says "never" exactly
// and "perhaps" with a small chance of being wrong. A "perhaps" is settled by the log itself (the
// command's aggregate, then the whole log if need be: mesh-service.ts), so idempotency stays
// exact whenever a retry comes: a minute later from the recent set, a week later from the log.

export interface CommandAt {
  seq: number;
  aggregate: string;
}

/** One layer of the filter: `capacity` ids at about FALSE_PERHAPS each, then the next layer. */
interface BloomLayer {
  bits: Uint8Array;
  /** bits in the layer */
  size: number;
  hashes: number;
  capacity: number;
  count: number;
}

export interface CommandIndex {
  /** the newest commands */
  recent: Map<string, CommandAt>;
  /**
   * the same ids in the order they came, as a ring: `ringAt` is where the next goes and where the
   * oldest is (a Map's own order would cost a walk past every id deleted from it)
   */
  ring: string[];
  ringAt: number;
  /** every command older than those in `recent` */
  older: BloomLayer[];
  /** the newest sequence a command in `older` landed at (0: none) */
  olderThrough: number;
}

/** How many commands are kept exactly: far more than a client's retries span. */
export const RECENT_COMMANDS = 20_000;
const FIRST_LAYER_CAPACITY = 65_536;
const FALSE_PERHAPS = 1e-4;

export const emptyCommandIndex = (): CommandIndex => ({ recent: new Map(), ring: [], ringAt: 0, older: [], olderThrough: 0 });

const layerFor = (capacity: number): BloomLayer => {
  const size = Math.ceil((-capacity * Math.log(FALSE_PERHAPS)) / Math.LN2 ** 2);
  return { bits: new Uint8Array(Math.ceil(size / 8)), size, hashes: Math.max(1, Math.round((size / capacity) * Math.LN2)), capacity, count: 0 };
};

/**
 * Two independent 32-bit hashes of the id (FNV-1a from two offsets, each finished with a
 * murmur3 mix); the filter's k positions are h1 + i·h2 (Kirsch–Mitzenmacher). Not a digest: the
 * ids are chosen by operators' clients, and a crafted collision would only cost a read of the log.
 */
const hashesOf = (id: string): [number, number] => {
  let a = 0x811c9dc5;
  let b = 0x050c5d1f;
  for (let i = 0; i < id.length; i++) {
    const code = id.charCodeAt(i);
    a = Math.imul(a ^ code, 0x01000193);
    b = Math.imul(b ^ code, 0x01000193);
  }
  return [mix(a) >>> 0, (mix(b ^ 0x9e3779b9) | 1) >>> 0];
};

const mix = (h: number): number => {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return h ^ (h >>> 16);
};

/** The k-th of the layer's positions for an id's hashes. */
const position = (layer: BloomLayer, [h1, h2]: [number, number], k: number): number => ((h1 + Math.imul(k, h2)) >>> 0) % layer.size;

const addOlder = (index: CommandIndex, id: string, at: CommandAt): void => {
  let layer = index.older.at(-1);
  if (!layer || layer.count >= layer.capacity) {
    layer = layerFor(FIRST_LAYER_CAPACITY * 4 ** index.older.length);
    index.older.push(layer);
  }
  const hashes = hashesOf(id);
  for (let k = 0; k < layer.hashes; k++) {
    const bit = position(layer, hashes, k);
    layer.bits[bit >>> 3]! |= 1 << (bit & 7);
  }
  layer.count++;
  index.olderThrough = Math.max(index.olderThrough, at.seq);
};

const perhapsOlder = (index: CommandIndex, id: string): boolean => {
  if (index.older.length === 0) return false;
  const hashes = hashesOf(id);
  return index.older.some((layer) => {
    for (let k = 0; k < layer.hashes; k++) {
      const bit = position(layer, hashes, k);
      if ((layer.bits[bit >>> 3]! & (1 << (bit & 7))) === 0) return false;
    }
    return true;
  });
};

/** Records a command the log holds (each event of a commit names it: recorded once). */
export const recordCommand = (index: CommandIndex, id: string, at: CommandAt): void => {
  if (index.recent.has(id)) return;
  index.recent.set(id, at);
  if (index.ring.length < RECENT_COMMANDS) {
    index.ring.push(id);
    return;
  }
  const oldest = index.ring[index.ringAt]!;
  index.ring[index.ringAt] = id;
  index.ringAt = (index.ringAt + 1) % RECENT_COMMANDS;
  const where = index.recent.get(oldest);
  index.recent.delete(oldest);
  if (where) addOlder(index, oldest, where);
};

/**
 * Where the log holds command `id`: found among the recent ones; `perhaps` when it may be among
 * the older ones (the log settles it); undefined when the log certainly does not hold it.
 */
export const commandCarriedOut = (index: CommandIndex, id: string): CommandAt | 'perhaps' | undefined => recentCommand(index, id) ?? (perhapsOlder(index, id) ? 'perhaps' : undefined);

/** Where the log holds command `id` if it is among the recent ones. */
export const recentCommand = (index: CommandIndex, id: string): CommandAt | undefined => index.recent.get(id);
