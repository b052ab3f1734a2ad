import { describe, expect, it } from '@jest/globals';
import { MeshFixture } from '../../../tests/helpers/given.js';
import { decideMeshCommand, type MeshCommand } from '../mesh/commands.js';
import { Refusal } from '../refusal.js';
import { diffAssignments, planMesh } from './plan.js';
import type { DeclaredAssignment } from './declaration.js';

const META = { commandId: 'plan-test', actor: 'operator:ada' };
const TIME = '2026-12-04T12:00:00.000Z';

const foundation = (): MeshFixture => {
  const mesh = new MeshFixture().node('novox').node('lab1', '/srv/mesh');
  for (const name of ['nats', 'vault', 'postgres', 'gitea']) mesh.registerFixture(name);
  mesh.assign('nats', 'novox', { hold: ['mesh-broker'] });
  mesh.assign('vault', 'novox', { hold: ['mesh-vault'] });
  mesh.assign('postgres', 'novox', { hold: ['mesh-store'] });
  return mesh;
};

const plan = (mesh: MeshFixture, ...commands: MeshCommand[]) =>
  planMesh(
    mesh.state,
    commands.map((command) => (state) => decideMeshCommand(command, state)),
    META,
    TIME,
  );

const assignGitea: MeshCommand = { type: 'assign', module: 'gitea', node: 'lab1', hold: ['mesh-git'], pins: {}, values: { 'public-name': 'git.example' }, placements: {} };

describe('planning a command against the mesh', () => {
  it('names the node an assignment reaches, the module added and each of its resources, and leaves the mesh as it was', () => {
    const mesh = foundation();
    const seq = mesh.state.seq;
    const result = plan(mesh, assignGitea);
    expect(result.seq).toBe(seq);
    expect(result.events).toEqual([expect.objectContaining({ aggregate: 'assignment.lab1.gitea', type: 'assignment.created' }), ...result.events.slice(1)]);
    const lab1 = result.nodes.find((n) => n.node === 'lab1');
    expect(lab1).toMatchObject({ before: 'declared', after: 'declared', problems: [] });
    expect(lab1?.modules).toHaveLength(1);
    expect(lab1?.modules[0]).toMatchObject({ module: 'gitea', change: 'added' });
    expect(lab1?.modules[0]?.resources.map((r) => [r.key, r.change])).toContainEqual(['gitea/gitea', 'added']);
    // The fold it was planned on is untouched.
    expect(mesh.state.seq).toBe(seq);
    expect(mesh.refusal({ type: 'unassign', module: 'gitea', node: 'lab1' }).length).toBeGreaterThan(0);
  });

  it('says nothing of a node whose declaration would not change, and names the provider\'s node only for the consumer\'s secret it applies', () => {
    const result = plan(foundation().node('spare'), assignGitea);
    // spare runs nothing and is told nothing new; novox's postgres is told the login it makes for gitea, and nothing else.
    expect(result.nodes.map((n) => n.node)).toEqual(['lab1', 'novox']);
    const novox = result.nodes.find((n) => n.node === 'novox');
    const changes = novox?.modules.flatMap((m) => m.resources.map((r) => [m.module, r.key, r.change]));
    expect(changes).toEqual([['postgres', expect.stringContaining('gitea'), 'added']]);
  });

  it('decides steps in turn: a drain unassigns, then the node is removed and left absent', () => {
    const mesh = foundation();
    mesh.assign('gitea', 'lab1', { hold: ['mesh-git'], values: { 'public-name': 'git.example' } });
    const result = plan(mesh, { type: 'unassign', module: 'gitea', node: 'lab1' }, { type: 'remove-node', node: 'lab1' });
    expect(result.summaries).toHaveLength(2);
    const lab1 = result.nodes.find((n) => n.node === 'lab1');
    expect(lab1).toMatchObject({ before: 'declared', after: 'absent' });
    expect(lab1?.modules).toEqual([expect.objectContaining({ module: 'gitea', change: 'removed' })]);
  });

  it('a cordon changes no declaration: the plan says so with no node', () => {
    const result = plan(foundation(), { type: 'cordon-node', node: 'lab1' });
    expect(result.events).toEqual([expect.objectContaining({ type: 'node.cordoned' })]);
    expect(result.nodes).toEqual([]);
  });

  it('throws the refusal carrying the command out would meet, naming every problem', () => {
    const mesh = foundation();
    let refused: unknown;
    try {
      plan(mesh, { type: 'assign', module: 'gitea', node: 'nosuch', hold: [], pins: {}, values: {}, placements: {} });
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(Refusal);
    expect((refused as Refusal).problems.map((p) => p.what).join(' ')).toContain('nosuch');
  });

  it('a node added is planned from absent to an empty declaration', () => {
    const result = plan(foundation(), { type: 'add-node', node: 'lab2' });
    expect(result.nodes).toEqual([{ node: 'lab2', before: 'absent', after: 'declared', modules: [], problems: [] }]);
  });
});

describe('the difference between two declarations of a node', () => {
  const assignment = (resources: DeclaredAssignment['resources'], definitionVersion = 1): DeclaredAssignment => ({ module: 'app', definitionVersion, artifact: null, seats: [], resources });
  const dir = (path: string) => ({ key: 'app/data', module: 'app', kind: 'directory' as const, path, owner: '1000:1000', mode: '0750' });

  it('names each field of a resource that changed, and the assignment fields', () => {
    const changes = diffAssignments([assignment([dir('/a')])], [assignment([dir('/b')], 2)]);
    expect(changes).toEqual([{ module: 'app', change: 'changed', fields: [{ field: 'definitionVersion', from: 1, to: 2 }], resources: [{ key: 'app/data', kind: 'directory', change: 'changed', fields: ['path'] }] }]);
  });

  it('is empty when nothing differs', () => {
    expect(diffAssignments([assignment([dir('/a')])], [assignment([dir('/a')])])).toEqual([]);
  });
});
