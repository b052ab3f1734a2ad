// What a snapshot of the controller's fold costs for a large mesh: its size, how long encoding
// blocks the fold (V8's serialize is synchronous) and how long decoding takes at start, beside
// what folding the same log from seq 1 takes. Pure: the fold alone, no server.
//
//   npx tsx bench/snapshot.bench.ts        (NODES=1000 EVENTS=1000000 ROUNDS=5 to change them)
//
// The mesh: NODES nodes, each running a consumer module whose requirement a seat answers, and
// EVENTS events in all, the rest of them facts reported about those nodes' modules (as a mesh that
// has run for a long while holds) — every one with its own command id, as the log has them.

import { deflateSync } from 'node:zlib';
import { decideMeshCommand, type MeshCommand } from '../src/domain/mesh/commands.js';
import { decodeMeshState, encodeMeshState } from '../src/domain/mesh/snapshot.js';
import { emptyMeshState, evolveMesh, type MeshState } from '../src/domain/mesh/state.js';
import { meshEventRegistry, type StoredMeshEvent } from '../src/domain/registry.js';
import { SYSTEM_SEATS } from '../src/domain/seats/system-seats.js';

const NODES = Number(process.env.NODES ?? 1_000);
const EVENTS = Number(process.env.EVENTS ?? 1_000_000);
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const registry = meshEventRegistry();

let seq = 0;
const events: StoredMeshEvent[] = [];
const state = emptyMeshState();
const record = (aggregate: string, proposed: readonly { type: string; data: unknown }[], commandId: string): void => {
  seq++;
  proposed.forEach((event, index) => {
    const typed = registry.validateNew(event.type, event.data, 'event');
    const stored = { id: `${commandId}-${index}`, schemaVersion: registry.currentVersion(event.type), aggregate, time: '2026-06-01T00:00:00.000Z', actor: 'bench', commandId, causationId: commandId, correlationId: commandId, ...typed, seq, index, version: (state.versions.get(aggregate) ?? 0) + 1 } as StoredMeshEvent;
    events.push(stored);
    evolveMesh(state, stored);
  });
};
const run = (command: MeshCommand): void => {
  const decision = decideMeshCommand(command, state);
  if (decision.events.length > 0) record(decision.aggregate, decision.events, `c${seq + 1}`);
};

const bus = { name: 'bus', contract: 'mesh-bus', provider: 'module', seat: 'mesh-broker' };
for (const seat of SYSTEM_SEATS) run({ type: 'define-system-seat', seat });
run({ type: 'register-module', manifest: { name: 'nats', provides: [{ provision: 'mesh-bus' }], canHold: ['mesh-broker'] } });
run({ type: 'register-module', manifest: { name: 'ci', requires: [bus], resources: { processes: [{ name: 'ci', run: ['ci'] }] } } });
run({ type: 'register-module', manifest: { name: 'tool', resources: { processes: [{ name: 'tool', run: ['tool'] }] } } });
run({ type: 'add-node', node: 'hub' });
run({ type: 'assign', module: 'nats', node: 'hub', hold: ['mesh-broker'], pins: {}, values: {}, placements: {} });
for (let i = 0; i < NODES; i++) {
  run({ type: 'add-node', node: `n${i}` });
  run({ type: 'assign', module: 'ci', node: `n${i}`, hold: [], pins: {}, values: {}, placements: {} });
  run({ type: 'assign', module: 'tool', node: `n${i}`, hold: [], pins: {}, values: {}, placements: {} });
}
for (let i = 0; events.length < EVENTS; i++) {
  const node = `n${i % NODES}`;
  const module = i % 2 === 0 ? 'ci' : 'tool';
  const version = { definitionVersion: 1, artifact: null };
  const data =
    i % 10 === 9
      ? { type: 'fact.refused', data: { node, module, declarationSequence: i, version, resource: `${module}/data`, kind: 'directory', reason: 'no space left on device' } }
      : { type: 'fact.applied', data: { node, module, declarationSequence: i, version, previous: null } };
  record(`fact.${node}`, [data], `f${i}`);
}

const best = (work: () => void): number => {
  let fastest = Number.POSITIVE_INFINITY;
  for (let round = 0; round < ROUNDS; round++) {
    const started = process.hrtime.bigint();
    work();
    fastest = Math.min(fastest, Number(process.hrtime.bigint() - started) / 1e6);
  }
  return fastest;
};

const foldMs = best(() => {
  const fresh: MeshState = emptyMeshState();
  for (const event of events) evolveMesh(fresh, event);
});
const print = (text: string): void => void process.stdout.write(`${text}\n`);
const mb = (n: number): string => `${(n / 1024 / 1024).toFixed(1)} MB`;

/** Encoding, decoding and (for comparison) deflating one state, best of ROUNDS each. */
const measure = (label: string, measured: MeshState): void => {
  let bytes = encodeMeshState(measured);
  const encodeMs = best(() => {
    bytes = encodeMeshState(measured);
  });
  const decodeMs = best(() => void decodeMeshState(bytes));
  let deflated = deflateSync(bytes, { level: 1 });
  const deflateMs = best(() => {
    deflated = deflateSync(bytes, { level: 1 });
  });
  print(`  ${label}`);
  print(`    encode (v8 serialize: the fold waits)   ${encodeMs.toFixed(0).padStart(6)} ms   ${mb(bytes.length).padStart(8)}`);
  print(`    decode at start (v8 deserialize)        ${decodeMs.toFixed(0).padStart(6)} ms`);
  print(`    deflate (level 1), for comparison       ${deflateMs.toFixed(0).padStart(6)} ms   ${mb(deflated.length).padStart(8)}`);
};

print(`\na mesh of ${NODES} nodes and ${events.length.toLocaleString('en')} events, best of ${ROUNDS}`);
print(`  fold from seq 1 (events already decoded: the log's read and checks are not counted)  ${foldMs.toFixed(0)} ms`);
measure('the whole state', state);
// What the state is without what it keeps of the commands carried out (one id per commit, or what a bounded index keeps of them).
measure('the state without its command ids', { ...state, commands: emptyMeshState().commands });
