import { describe, expect, it } from '@jest/globals';
import { MeshFixture, stored } from '../../tests/helpers/given.js';
import { evolveMesh } from '../domain/mesh/state.js';
import type { Report } from '../domain/reports/report.js';
import { overview, type NodeHealthInput } from './overview.js';

const now = new Date('2026-12-02T12:00:00.000Z');
const ago = (ms: number): Date => new Date(now.getTime() - ms);

const mesh = (): MeshFixture => {
  const m = new MeshFixture().node('alpha').node('beta');
  for (const name of ['local-bus', 'greeter']) m.registerFixture(name);
  m.assign('local-bus', 'alpha', { hold: ['mesh-broker'] });
  m.assign('greeter', 'beta', { hold: ['front-desk'] });
  return m;
};

const report = (node: string, digest: string, module: string, outcomes: Report['resources'] = []): Report => ({
  node,
  sequence: 3,
  digest,
  at: ago(1_000).toISOString(),
  resources: outcomes,
  running: outcomes.some((o) => o.outcome !== 'applied') ? [] : [{ module, definitionVersion: 1, artifact: null }],
  refusal: null,
});

describe('the overview never claims health from absence', () => {
  const declared = new Map([
    ['alpha', { sequence: 3, digest: 'sha256:a', derivedFromSeq: 20 }],
    ['beta', { sequence: 3, digest: 'sha256:b', derivedFromSeq: 20 }],
  ]);

  it('is healthy only when every node was heard from and applied its newest declaration, with nothing held', () => {
    const nodes: NodeHealthInput[] = [
      { node: 'alpha', report: report('alpha', 'sha256:a', 'local-bus'), reportedAt: ago(1_000), heartbeatAt: ago(500) },
      { node: 'beta', report: report('beta', 'sha256:b', 'greeter'), reportedAt: ago(1_000), heartbeatAt: ago(500) },
    ];
    const result = overview({ state: mesh().state, nodes, declared, now, heartbeatThresholdMs: 15_000 });
    expect(result.problems).toEqual([]);
    expect(result.healthy).toBe(true);
    expect(result.nodes.find((n) => n.node === 'beta')?.seats).toEqual(['front-desk']);
  });

  it('does not turn an outage of its own store into nodes never heard from', () => {
    const why = 'PostgreSQL at postgres://127.0.0.1:5432/mesh is unreachable since 2026-12-02T11:59:00.000Z (connect ECONNREFUSED 127.0.0.1:5432)';
    const result = overview({ state: mesh().state, nodes: [], nodesUnknown: why, declared, now, heartbeatThresholdMs: 15_000 });
    expect(result.healthy).toBe(false);
    expect(result.problems).toEqual([`what the nodes last said is not known, so none is judged heard from or not: ${why}`]);
    expect(result.problems.join('\n')).not.toContain('never heard from');
    expect(result.nodes.map((n) => [n.node, n.lastHeard, n.statusUnknown])).toEqual([
      ['alpha', null, why],
      ['beta', null, why],
    ]);
  });

  it('names a node over its budget while it is named for it, and only then', () => {
    const line = '2,998 fact.capabilities values never stated; 10 messages refused, the last: a heartbeat of 905000 bytes: at most 4096 are read';
    const healthy = (node: string, digest: string, module: string): NodeHealthInput => ({ node, report: report(node, digest, module), reportedAt: ago(1_000), heartbeatAt: ago(500) });
    const flooding = (until: Date): NodeHealthInput[] => [{ ...healthy('alpha', 'sha256:a', 'local-bus'), overBudget: { line, since: ago(30_000), until } }, healthy('beta', 'sha256:b', 'greeter')];
    const named = overview({ state: mesh().state, nodes: flooding(new Date(now.getTime() + 30_000)), declared, now, heartbeatThresholdMs: 15_000 });
    expect(named.healthy).toBe(false);
    expect(named.problems).toEqual([`alpha: over its budget since ${ago(30_000).toISOString()}: ${line}`]);
    expect(named.nodes.map((n) => [n.node, n.overBudget])).toEqual([
      ['alpha', `over its budget since ${ago(30_000).toISOString()}: ${line}`],
      ['beta', null],
    ]);
    const quiet = overview({ state: mesh().state, nodes: flooding(ago(1)), declared, now, heartbeatThresholdMs: 15_000 });
    expect(quiet.problems).toEqual([]);
    expect(quiet.healthy).toBe(true);
  });

  it('names a node never heard from, one silent since T, and a declaration not applied', () => {
    const nodes: NodeHealthInput[] = [{ node: 'alpha', report: report('alpha', 'sha256:old', 'local-bus'), reportedAt: ago(60_000), heartbeatAt: ago(60_000) }];
    const result = overview({ state: mesh().state, nodes, declared, now, heartbeatThresholdMs: 15_000 });
    expect(result.healthy).toBe(false);
    expect(result.problems).toEqual([
      `alpha: not heard from since ${ago(60_000).toISOString()}`,
      `alpha: has not applied declaration 3 (last applied 3 at ${ago(1_000).toISOString()})`,
      'beta: never heard from',
      'beta: has not applied declaration 3',
    ]);
  });

  it('lists a source no trigger was heard from as not known, without calling the mesh unhealthy for it', () => {
    const m = mesh();
    m.registerFixture('distribution');
    const result = overview({ state: m.state, nodes: [], declared: new Map(), now, heartbeatThresholdMs: 15_000 });
    expect(result.notKnown).toEqual(['https://github.com/distribution/distribution@v2.8.3: no trigger heard from it yet, so a change there is not known (distribution)']);
  });

  it('counts held resources with their reasons, and names refusals and crash loops', () => {
    const held: Report['resources'] = [
      { key: 'greeter/data', module: 'greeter', kind: 'directory', outcome: 'applied', reason: null, restarts: null },
      { key: 'greeter/prepare', module: 'greeter', kind: 'run-once', outcome: 'refused', reason: 'exit status 3', restarts: null },
      { key: 'greeter/server', module: 'greeter', kind: 'process', outcome: 'held', reason: 'waiting for greeter/prepare, which failed', restarts: null },
    ];
    const nodes: NodeHealthInput[] = [
      { node: 'alpha', report: report('alpha', 'sha256:a', 'local-bus'), reportedAt: ago(1_000), heartbeatAt: ago(500) },
      { node: 'beta', report: report('beta', 'sha256:b', 'greeter', held), reportedAt: ago(1_000), heartbeatAt: ago(500) },
    ];
    // What is held is what the facts stated (fact.held), with where it was first stated.
    const state = mesh().state;
    const fact = stored('fact.beta', { type: 'fact.held', data: { node: 'beta', module: 'greeter', declarationSequence: 3, resources: [{ resource: 'greeter/server', kind: 'process', reason: 'waiting for greeter/prepare, which failed' }] } });
    evolveMesh(state, fact);
    const result = overview({ state, nodes, declared, now, heartbeatThresholdMs: 15_000 });
    expect(result.problems).toEqual([
      `beta/greeter: assigned, not taken — 1 held since ${fact.time} (log seq ${fact.seq}), 1 of 3 applied (waiting for greeter/prepare, which failed)`,
      'beta/greeter: greeter/prepare refused: exit status 3',
    ]);
    expect(result.nodes.find((n) => n.node === 'beta')?.holds).toEqual(['greeter/server: waiting for greeter/prepare, which failed']);
    expect(result.nodes.find((n) => n.node === 'beta')?.held).toEqual([
      { node: 'beta', module: 'greeter', resource: 'greeter/server', kind: 'process', reason: 'waiting for greeter/prepare, which failed', since: { seq: fact.seq, time: fact.time } },
    ]);
  });

  it('names a declaration that cannot be composed until one derived after the refusal is published', () => {
    const nodes: NodeHealthInput[] = [
      { node: 'alpha', report: report('alpha', 'sha256:a', 'local-bus'), reportedAt: ago(1_000), heartbeatAt: ago(500) },
      { node: 'beta', report: report('beta', 'sha256:b', 'greeter'), reportedAt: ago(1_000), heartbeatAt: ago(500) },
    ];
    const state = mesh().state;
    state.declarations.refusals.set('beta', { reason: 'sha256:r', seq: 21, derivedFromSeq: 20 });
    const standing = overview({ state, nodes, declared, now, heartbeatThresholdMs: 15_000 });
    expect(standing.problems).toEqual(['beta: its declaration cannot be composed (stated at log sequence 21); the previous one stands']);
    expect(standing.healthy).toBe(false);

    const replaced = new Map([...declared, ['beta', { sequence: 4, digest: 'sha256:b', derivedFromSeq: 21 }]]);
    const after = overview({ state, nodes, declared: replaced, now, heartbeatThresholdMs: 15_000 });
    expect(after.problems).toEqual([]);
    expect(after.healthy).toBe(true);
  });
});
