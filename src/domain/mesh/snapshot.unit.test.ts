import { describe, expect, it } from '@jest/globals';
import { serialize } from 'node:v8';
import fc from 'fast-check';
import { foldDifference as difference } from '../../../tests/helpers/fold-difference.js';
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
