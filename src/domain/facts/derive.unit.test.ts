import { describe, expect, it } from '@jest/globals';
import { stored } from '../../../tests/helpers/given.js';
import type { Declaration } from '../declarations/declaration.js';
import { emptyMeshState, evolveMesh, type MeshState } from '../mesh/state.js';
import type { Report } from '../reports/report.js';
import { deriveFacts } from './derive.js';
import { factAggregate } from './events.js';
import { statedHolds } from './state.js';

const declaration = (sequence: number, definitionVersion = 1): Declaration => ({
  node: 'lab1',
  sequence,
  digest: `sha256:${String(sequence).padStart(64, '0')}`,
  derivedFromSeq: 10,
  assignments: [
    {
      module: 'echo',
      definitionVersion,
      artifact: null,
      seats: [],
      resources: [
        { key: 'echo/prepare', module: 'echo', kind: 'run-once', prepare: true, image: null, command: ['true'], user: null, env: {}, envFiles: [], mounts: [], reads: [], after: [] },
        { key: 'echo/server', module: 'echo', kind: 'process', run: ['echo-server'], user: null, env: {}, envFiles: [], restartOn: [], after: ['echo/prepare'] },
      ],
    },
  ],
});

const report = (d: Declaration, outcomes: Partial<Record<string, Report['resources'][number]['outcome']>> = {}, reasons: Record<string, string> = {}): Report => ({
  node: d.node,
  sequence: d.sequence,
  digest: d.digest,
  at: '2026-01-01T00:00:00.000Z',
  resources: d.assignments.flatMap((a) => a.resources.map((r) => ({ key: r.key, module: r.module, kind: r.kind, outcome: outcomes[r.key] ?? 'applied', reason: reasons[r.key] ?? null, restarts: outcomes[r.key] === 'crash-looping' ? 7 : null }))),
  running: Object.values(outcomes).some((o) => o && o !== 'applied') ? [] : d.assignments.map((a) => ({ module: a.module, definitionVersion: a.definitionVersion, artifact: a.artifact })),
  refusal: null,
});

/** States the derived facts, as the controller would, and returns them. */
const state = (mesh: MeshState, d: Declaration, r: Report) => {
  const facts = deriveFacts(mesh, d, r);
  for (const fact of facts) evolveMesh(mesh, stored(factAggregate('lab1'), fact));
  return facts;
};

describe('facts from reports, stated on change', () => {
  it('three identical reports make one applied fact; a new version makes one more naming the previous', () => {
    const mesh = emptyMeshState();
    const first = declaration(1);
    expect(state(mesh, first, report(first)).map((f) => f.type)).toEqual(['fact.applied']);
    expect(state(mesh, first, report(first))).toEqual([]);
    expect(state(mesh, first, report(first))).toEqual([]);
    const upgraded = declaration(2, 2);
    expect(state(mesh, upgraded, report(upgraded))).toEqual([
      { type: 'fact.applied', data: { node: 'lab1', module: 'echo', declarationSequence: 2, version: { definitionVersion: 2, artifact: null }, previous: { definitionVersion: 1, artifact: null } } },
    ]);
  });

  it('a refusal names machine, module, version, resource and the reason as the host gave it, once (and what it holds back is held)', () => {
    const mesh = emptyMeshState();
    const d = declaration(1);
    const failed = report(d, { 'echo/prepare': 'refused', 'echo/server': 'held' }, { 'echo/prepare': 'exit status 3: migration 0042 failed', 'echo/server': 'waiting for echo/prepare, which failed' });
    expect(state(mesh, d, failed)).toEqual([
      { type: 'fact.refused', data: { node: 'lab1', module: 'echo', declarationSequence: 1, version: { definitionVersion: 1, artifact: null }, resource: 'echo/prepare', kind: 'run-once', reason: 'exit status 3: migration 0042 failed' } },
      { type: 'fact.held', data: { node: 'lab1', module: 'echo', declarationSequence: 1, resources: [{ resource: 'echo/server', kind: 'process', reason: 'waiting for echo/prepare, which failed' }] } },
    ]);
    expect(state(mesh, d, failed)).toEqual([]);
  });

  it('a crash loop is stated once with its count, not per restart', () => {
    const mesh = emptyMeshState();
    const d = declaration(1);
    const looping = report(d, { 'echo/server': 'crash-looping' }, { 'echo/server': 'exited with status 1' });
    expect(state(mesh, d, looping).map((f) => [f.type, 'restarts' in f.data ? f.data.restarts : undefined])).toEqual([['fact.crash-looping', 7]]);
    expect(state(mesh, d, looping)).toEqual([]);
  });

  it('a report that does not add up is itself a fact, naming the difference', () => {
    const mesh = emptyMeshState();
    const d = declaration(1);
    const short = { ...report(d), resources: report(d).resources.slice(0, 1) };
    expect(state(mesh, d, short)[0]).toEqual({ type: 'fact.report-mismatch', data: { node: 'lab1', declarationSequence: 1, sent: 2, answered: 1, missing: ['echo/server'], unexpected: [] } });
  });

  it('a module no longer declared and no longer running is stated stopped', () => {
    const mesh = emptyMeshState();
    const d = declaration(1);
    state(mesh, d, report(d));
    const emptied: Declaration = { ...d, sequence: 2, assignments: [] };
    expect(state(mesh, emptied, report(emptied)).map((f) => f.type)).toEqual(['fact.stopped']);
  });

  it('a hold is one held fact per module naming each resource and its reason as the node gave it, stated once, and cleared once when it ends', () => {
    const mesh = emptyMeshState();
    const d = declaration(1);
    const waiting = report(d, { 'echo/prepare': 'held', 'echo/server': 'held' }, { 'echo/prepare': 'waiting for the vault to deliver echo-token', 'echo/server': 'waiting for echo/prepare' });
    expect(state(mesh, d, waiting)).toEqual([
      {
        type: 'fact.held',
        data: {
          node: 'lab1',
          module: 'echo',
          declarationSequence: 1,
          resources: [
            { resource: 'echo/prepare', kind: 'run-once', reason: 'waiting for the vault to deliver echo-token' },
            { resource: 'echo/server', kind: 'process', reason: 'waiting for echo/prepare' },
          ],
        },
      },
    ]);
    expect(state(mesh, d, waiting)).toEqual([]);
    // Fewer held: the new set, stated once; what is still held keeps the place it was first stated.
    const since = statedHolds(mesh.facts, 'lab1', 'echo').get('echo/server')?.since;
    const fewer = report(d, { 'echo/server': 'held' }, { 'echo/server': 'waiting for echo/prepare' });
    expect(state(mesh, d, fewer).map((f) => f.data)).toEqual([{ node: 'lab1', module: 'echo', declarationSequence: 1, resources: [{ resource: 'echo/server', kind: 'process', reason: 'waiting for echo/prepare' }] }]);
    expect(state(mesh, d, fewer)).toEqual([]);
    expect(statedHolds(mesh.facts, 'lab1', 'echo').get('echo/server')?.since).toEqual(since);
    // Everything applied: the hold is cleared by one held fact with nothing in it, then the module runs.
    expect(state(mesh, d, report(d)).map((f) => [f.type, 'resources' in f.data ? f.data.resources : undefined])).toEqual([
      ['fact.held', []],
      ['fact.applied', undefined],
    ]);
    expect(statedHolds(mesh.facts, 'lab1', 'echo').size).toBe(0);
    expect(state(mesh, d, report(d))).toEqual([]);
  });

  it('a reason that changes is a new held fact; a module undeclared while held is cleared; a declaration refused as a whole changes no hold', () => {
    const mesh = emptyMeshState();
    const d = declaration(1);
    state(mesh, d, report(d, { 'echo/server': 'held' }, { 'echo/server': 'no Docker engine answers: a' }));
    expect(state(mesh, d, report(d, { 'echo/server': 'held' }, { 'echo/server': 'no Docker engine answers: b' })).map((f) => f.type)).toEqual(['fact.held']);
    const refusedWhole: Report = { ...report(d, { 'echo/prepare': 'refused', 'echo/server': 'refused' }, { 'echo/prepare': 'sequence 1 is lower', 'echo/server': 'sequence 1 is lower' }), refusal: 'sequence 1 is lower than 4, applied' };
    expect(state(mesh, d, refusedWhole).filter((f) => f.type === 'fact.held')).toEqual([]);
    const emptied: Declaration = { ...d, sequence: 2, assignments: [] };
    expect(state(mesh, emptied, report(emptied))).toEqual([{ type: 'fact.held', data: { node: 'lab1', module: 'echo', declarationSequence: 2, resources: [] } }]);
    expect(state(mesh, emptied, report(emptied))).toEqual([]);
  });
});
