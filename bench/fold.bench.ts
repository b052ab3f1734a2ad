// Folding one event costs the same whatever stands in the mesh: the time per event of folding
// 20,000 facts into a mesh with no outstanding refusal and into one with 10,000 (target ratio
// ≤ 1.2). Pure: the fold alone, no server.
//
//   npm run bench:fold        (EVENTS=20000 REFUSALS=10000 ROUNDS=9 to change them)
//
// Run with --expose-gc (the npm script does) so each timed fold starts with its setup collected.

import type { StoredMeshEvent } from '../src/domain/registry.js';
import { emptyMeshState, evolveMesh, type MeshState } from '../src/domain/mesh/state.js';

const EVENTS = Number(process.env.EVENTS ?? 20_000);
const REFUSALS = Number(process.env.REFUSALS ?? 10_000);
const ROUNDS = Number(process.env.ROUNDS ?? 9);
const HISTORY = Math.max(REFUSALS, Number(process.env.HISTORY ?? REFUSALS));

let seq = 0;
type FactEvent<T extends StoredMeshEvent['type']> = Extract<StoredMeshEvent, { type: T }>;
const event = <T extends 'fact.refused' | 'fact.applied'>(type: T, aggregate: string, data: FactEvent<T>['data']): StoredMeshEvent => {
  seq++;
  // Built by hand as the log would store it, without decoding, so the bench times the fold alone.
  return { id: `e${seq}`, type, schemaVersion: 1, aggregate, time: '2026-01-01T00:00:00.000Z', actor: 'bench', commandId: `c${seq}`, causationId: `c${seq}`, correlationId: `c${seq}`, data, seq, index: 0, version: seq } as FactEvent<T>;
};
const version = { definitionVersion: 1, artifact: null };

/**
 * A mesh whose log holds HISTORY facts about 100 other nodes, `refusals` of them refusals still
 * outstanding and the rest applied: both meshes have folded as many events (as many command ids),
 * so the ratio is what outstanding refusals cost, not what a longer history costs (that is the
 * memory issue 16 bounds).
 */
const meshWithRefusals = (refusals: number): MeshState => {
  const state = emptyMeshState();
  for (let i = 0; i < HISTORY; i++) {
    const node = `r${i % 100}`;
    const module = `m${Math.floor(i / 100)}`;
    evolveMesh(
      state,
      i < refusals
        ? event('fact.refused', `fact.${node}`, { node, module, declarationSequence: 1, version, resource: `${module}/data`, kind: 'directory', reason: 'no space' })
        : event('fact.applied', `fact.${node}`, { node, module, declarationSequence: 1, version, previous: null }),
    );
  }
  return state;
};

/** Facts applied on other nodes, as reports state them. */
const facts = Array.from({ length: EVENTS }, (_, i) => {
  const node = `a${i % 500}`;
  return event('fact.applied', `fact.${node}`, { node, module: `svc${i % 7}`, declarationSequence: i + 1, version: { definitionVersion: 1 + (i % 3), artifact: null }, previous: null });
});

/** Collects what building a mesh left behind, so the timed fold does not pay for its setup's garbage. */
const collect: () => void = (globalThis as { gc?: () => void }).gc ?? (() => undefined);

const foldOnce = (refusals: number): number => {
  const state = meshWithRefusals(refusals);
  collect();
  const started = process.hrtime.bigint();
  for (const fact of facts) evolveMesh(state, fact);
  return Number(process.hrtime.bigint() - started) / facts.length;
};

// Rounds of the two meshes alternate, so a burst of load on the machine falls on both alike.
foldOnce(0); // warm up
let none = Number.POSITIVE_INFINITY;
let many = Number.POSITIVE_INFINITY;
for (let round = 0; round < ROUNDS; round++) {
  none = Math.min(none, foldOnce(0));
  many = Math.min(many, foldOnce(REFUSALS));
}
const print = (text: string): void => void process.stdout.write(`${text}\n`);
print(`\nfolding ${EVENTS} facts after ${HISTORY} earlier ones (best of ${ROUNDS})`);
print(`${'outstanding refusals'.padStart(22)} ${'ns/event'.padStart(10)} ${'events/s'.padStart(12)}`);
for (const [refusals, ns] of [
  [0, none],
  [REFUSALS, many],
] as const) {
  print(`${String(refusals).padStart(22)} ${ns.toFixed(0).padStart(10)} ${Math.round(1e9 / ns).toLocaleString('en').padStart(12)}`);
}
print(`ratio ${REFUSALS} : 0 = ${(many / none).toFixed(2)} (target ≤ 1.2)`);
