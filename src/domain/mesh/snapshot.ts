import { deserialize, serialize } from 'node:v8';
import { emptyMeshState, type MeshState } from './state.js';

// A fold's state as bytes, so a process can start from where a fold stood instead of from seq 1.
// The state is plain data (objects, arrays, Maps, Sets, strings, numbers); V8's structured clone
// keeps all of it as it is — Maps and Sets, undefined, and two places that share one object still
// share it once decoded — with no schema to keep beside each slice. What it does not say is which
// code folded it: a snapshot is only ever read by the fold whose code version wrote it (its digest
// travels beside the bytes, src/adapters/fold-version.ts), so a slice may change its state's shape
// freely.

export const encodeMeshState = (state: MeshState): Uint8Array => serialize(state);

/**
 * The state the bytes hold. Throws when they do not decode, or decode to something without every
 * part of a mesh's state: bytes of another kind, or cut short.
 */
export const decodeMeshState = (bytes: Uint8Array): MeshState => {
  const decoded: unknown = deserialize(bytes);
  if (typeof decoded !== 'object' || decoded === null) throw new Error(`the bytes decode to ${decoded === null ? 'null' : typeof decoded}, not a mesh state`);
  const missing = Object.keys(emptyMeshState()).filter((part) => !(part in decoded));
  if (missing.length > 0) throw new Error(`the bytes decode to an object without ${missing.join(', ')}: not a mesh state`);
  const seq = (decoded as { seq: unknown }).seq;
  if (typeof seq !== 'number' || !Number.isInteger(seq) || seq < 0) throw new Error(`the state's seq is ${String(seq)}, not a log sequence`);
  return decoded as MeshState;
};
