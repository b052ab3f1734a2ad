import { describe, expect, it } from '@jest/globals';
import { MeshFixture } from '../../../tests/helpers/given.js';
import { composeBusUsers } from '../bus/users.js';
import { decideMeshCommand } from '../mesh/commands.js';
import { Refusal } from '../refusal.js';
import { allEnrolmentTokens, nodeNamed } from './state.js';
import { tokenVerifier } from './enrolment.js';

const KEY = (n: number): string => Buffer.alloc(32, n).toString('base64');

const baseMesh = (): MeshFixture => {
  const mesh = new MeshFixture().node('novox').node('lab1');
  mesh.registerFixture('nats');
  mesh.registerFixture('distribution');
  return mesh;
};

const enrol = (mesh: MeshFixture, node: string, n: number): void => {
  const tokenId = n.toString(16).padStart(16, '0');
  mesh.run({ type: 'issue-enrolment-token', tokenId, verifier: tokenVerifier(`s${n}`), node, expiresAt: '2099-01-01T00:00:00Z', publicKey: KEY(n + 100) });
  mesh.run({ type: 'enrol-node', node, tokenId, secret: `s${n}`, publicKey: KEY(n), busKey: KEY(n + 50), now: '2026-01-01T00:00:00Z' });
};

describe('cordoning a node', () => {
  it('refuses new assignments to it, naming the cordon; what it runs stays', () => {
    const mesh = baseMesh();
    mesh.assign('nats', 'novox', { hold: ['mesh-broker'] });
    expect(mesh.run({ type: 'cordon-node', node: 'novox' })).toEqual([{ type: 'node.cordoned', data: { node: 'novox' } }]);
    const [problem] = mesh.refusal({ type: 'assign', module: 'distribution', node: 'novox', hold: [], pins: {}, values: {}, placements: {} });
    expect(problem).toMatchObject({ what: 'novox', why: expect.stringContaining('novox is cordoned') as unknown, remedy: expect.stringContaining('mesh node uncordon novox') as unknown });
    expect(problem?.missing).toBeUndefined();
    expect(mesh.state.assignments.byKey.has('novox/nats')).toBe(true);
    // Elsewhere, assignments go on.
    mesh.assign('distribution', 'lab1');
  });

  it('is idempotent, and uncordoning lets assignments in again', () => {
    const mesh = baseMesh();
    mesh.run({ type: 'cordon-node', node: 'lab1' });
    expect(mesh.run({ type: 'cordon-node', node: 'lab1' })).toEqual([]);
    expect(mesh.run({ type: 'uncordon-node', node: 'lab1' })).toEqual([{ type: 'node.uncordoned', data: { node: 'lab1' } }]);
    expect(mesh.run({ type: 'uncordon-node', node: 'lab1' })).toEqual([]);
    mesh.assign('nats', 'lab1', { hold: ['mesh-broker'] });
  });

  it('refuses an unknown node as not found, listing the nodes there are', () => {
    for (const type of ['cordon-node', 'uncordon-node', 'remove-node'] as const) {
      const [problem] = baseMesh().refusal({ type, node: 'nosuch' });
      expect(problem).toMatchObject({ what: 'nosuch', why: 'no such node', missing: 'node', remedy: 'nodes: lab1, novox' });
    }
  });
});

describe('removing a node', () => {
  it('is refused while modules are assigned to it, naming each', () => {
    const mesh = baseMesh();
    mesh.assign('nats', 'novox', { hold: ['mesh-broker'] });
    mesh.assign('distribution', 'novox');
    const problems = mesh.refusal({ type: 'remove-node', node: 'novox' });
    expect(problems.map((p) => p.what)).toEqual(['novox/nats', 'novox/distribution']);
    expect(problems[0]?.remedy).toContain('--drain');
  });

  it('once drained, removes it: its host user and its tokens leave the bus, and enrolling with its old token is refused', () => {
    const mesh = baseMesh();
    enrol(mesh, 'novox', 1);
    mesh.run({ type: 'issue-enrolment-token', tokenId: '00000000000000ff', verifier: tokenVerifier('unspent'), node: 'novox', expiresAt: '2099-01-01T00:00:00Z', publicKey: KEY(200) });
    mesh.assign('nats', 'novox', { hold: ['mesh-broker'] });
    mesh.run({ type: 'cordon-node', node: 'novox' });
    mesh.run({ type: 'unassign', module: 'nats', node: 'novox' });
    const wire = { prefix: 'mesh', logStream: 'LOG', logPrefix: 'mesh.log', nodesStream: 'NODES', controlStream: 'CONTROL', eventsStream: 'EVENTS' };
    const users = () => composeBusUsers(mesh.state, { wire, controllerKey: KEY(9), snapshotWriterKey: KEY(8), moduleKey: () => KEY(7), now: new Date('2026-01-02T00:00:00Z') }).map((u) => u.name);
    expect(users()).toEqual(expect.arrayContaining(['host novox', 'enrolment token 00000000000000ff']));

    expect(mesh.run({ type: 'remove-node', node: 'novox' })).toEqual([{ type: 'node.removed', data: { node: 'novox' } }]);
    expect(nodeNamed(mesh.state.nodes, 'novox')).toBeUndefined();
    expect(users().filter((name) => name.includes('novox') || name.includes('enrolment'))).toEqual([]);
    expect([...allEnrolmentTokens(mesh.state.nodes)].map((t) => t.retiredWith)).toEqual(['novox', 'novox']);
    expect(() => decideMeshCommand({ type: 'enrol-node', node: 'novox', tokenId: '00000000000000ff', secret: 'unspent', publicKey: KEY(3), now: '2026-01-01T00:00:00Z' }, mesh.state)).toThrow(Refusal);
    // Assigning to it is now a missing node.
    expect(mesh.refusal({ type: 'assign', module: 'nats', node: 'novox', hold: [], pins: {}, values: {}, placements: {} })[0]).toMatchObject({ missing: 'node' });
  });

  it('added again, it is a new machine: not cordoned, not enrolled, and a new token enrols it', () => {
    const mesh = baseMesh();
    enrol(mesh, 'lab1', 2);
    mesh.run({ type: 'cordon-node', node: 'lab1' });
    mesh.run({ type: 'remove-node', node: 'lab1' });
    mesh.node('lab1');
    expect(nodeNamed(mesh.state.nodes, 'lab1')).toEqual({ name: 'lab1', root: '/var/lib/mesh', address: null });
    enrol(mesh, 'lab1', 3);
    expect(nodeNamed(mesh.state.nodes, 'lab1')?.busKey).toBe(KEY(53));
  });
});
