import { describe, expect, it } from '@jest/globals';
import { deserialize, serialize } from 'node:v8';
import fc from 'fast-check';
import { meshHistory } from '../../../tests/helpers/mesh-history.js';
import type { StoredMeshEvent } from '../registry.js';
import { decodeMeshState, encodeMeshState } from './snapshot.js';
import { emptyMeshState, evolveMesh, type MeshState } from './state.js';

// A fold started from a snapshot taken at any point of the log, then given the rest of the log,
// is the fold of the whole log: the same Maps, Sets and objects, in the same order.

const deepFreeze = <T>(value: T): T => {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
};

// Maps and Sets V8 decodes are made in the process's realm; jest runs a test in a realm of its own.
const decoded = deserialize(serialize({ map: new Map(), set: new Set() })) as { map: object; set: object };
const isMap = (value: object): value is Map<unknown, unknown> => value instanceof Map || value instanceof (decoded.map.constructor as MapConstructor);
const isSet = (value: object): value is Set<unknown> => value instanceof Set || value instanceof (decoded.set.constructor as SetConstructor);

/**
 * Where two folds differ (undefined: nowhere): every Map and Set in the same order, every array
 * and object with the same fields. (V8's own bytes are no measure: an array it decoded encodes
 * differently from an equal one built by push.)
 */
const difference = (a: unknown, b: unknown, path = 'state'): string | undefined => {
  if (a === b) return undefined;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return Object.is(a, b) ? undefined : `${path}: ${String(a)} against ${String(b)}`;
  if (isMap(a) || isSet(a)) {
    if (!(isMap(a) ? isMap(b) : isSet(b)) || a.size !== (b as Set<unknown>).size) return `${path}: a ${a.constructor.name} of ${a.size} against ${String(b)}`;
    const right = (b as Map<unknown, unknown>).entries();
    let i = 0;
    for (const [key, value] of a.entries()) {
      const [otherKey, otherValue] = right.next().value as [unknown, unknown];
      i++;
      const found = difference(key, otherKey, `${path} key #${i}`) ?? difference(value, otherValue, `${path}.${String(key)}`);
      if (found) return found;
    }
    return undefined;
  }
  if (Array.isArray(a) !== Array.isArray(b)) return `${path}: an array against an object`;
  const left = Object.keys(a);
  const right = Object.keys(b);
  if (left.length !== right.length) return `${path}: fields ${left.join(',')} against ${right.join(',')}`;
  for (let i = 0; i < left.length; i++) {
    const key = left[i] as string;
    if (key !== right[i]) return `${path}: field ${key} against ${String(right[i])}`;
    const found = difference((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key], `${path}.${key}`);
    if (found) return found;
  }
  return undefined;
};

const foldAll = (events: readonly StoredMeshEvent[], from = emptyMeshState()): MeshState => {
  for (const event of events) evolveMesh(from, event);
  return from;
};

describe('a snapshot of the fold', () => {
  it('taken at any point and folded on to the end, equals the fold of the whole log', () => {
    // Frozen: a slice that kept an event's data and changed it later would change every fold that shares it.
    const events = deepFreeze(meshHistory({ steps: 5_000, seed: 16 }));
    expect(events.length).toBeGreaterThan(3_000);
    const types = new Set(events.map((event) => event.type));
    expect(types.size).toBeGreaterThan(25);
    const whole = foldAll(events);

    const points = fc.sample(fc.integer({ min: 0, max: events.length }), { seed: 16, numRuns: 1_000 }).sort((a, b) => a - b);
    // One fold, snapshotted as it passes each point; each snapshot then decoded and folded on to the end.
    const state = emptyMeshState();
    let folded = 0;
    for (const point of points) {
      for (; folded < point; folded++) evolveMesh(state, events[folded] as StoredMeshEvent);
      const resumed = foldAll(events.slice(point), decodeMeshState(encodeMeshState(state)));
      const differs = difference(resumed, whole);
      if (differs) throw new Error(`resumed from a snapshot after ${point} events, the fold differs from the whole log's at ${differs}`);
    }
    // and the comparison tells a fold that missed one event from the whole
    expect(difference(foldAll(events.slice(1)), whole)).toBeDefined();
  });

  it('refuses bytes that are not a mesh state, naming what is wrong', () => {
    const bytes = encodeMeshState(foldAll(meshHistory({ steps: 50, seed: 1 })));
    expect(() => decodeMeshState(bytes.subarray(0, bytes.length / 2))).toThrow();
    expect(() => decodeMeshState(serialize({ seq: 3 }))).toThrow(/without commands, versions/);
    expect(() => decodeMeshState(serialize('mesh'))).toThrow(/not a mesh state/);
    expect(() => decodeMeshState(serialize({ ...emptyMeshState(), seq: -1 }))).toThrow(/not a log sequence/);
  });
});
