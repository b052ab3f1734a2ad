import { describe, expect, it } from '@jest/globals';
import { MeshFixture, eventOf, minimalModule } from '../../../tests/helpers/given.js';
import { holderOf } from '../seats/state.js';
import { assignmentOf } from './state.js';
import { decideMeshCommand } from '../mesh/commands.js';

const bus = { name: 'bus', contract: 'mesh-bus', provider: 'module', seat: 'mesh-broker' };
const consumer = (name: string, requires: Record<string, unknown>[]) => minimalModule(name, { requires: [bus, ...requires] });
const provider = (name: string, provision: string, extra: Record<string, unknown> = {}) => minimalModule(name, { provides: [{ provision }], ...extra });

const baseMesh = (): MeshFixture => {
  const mesh = new MeshFixture().node('novox').node('lab1').node('lab2', '/srv/mesh');
  mesh.registerFixture('nats');
  mesh.registerFixture('vault');
  mesh.assign('nats', 'novox', { hold: ['mesh-broker'] });
  return mesh;
};

const answerOf = (mesh: MeshFixture, node: string, module: string, requirement: string) =>
  assignmentOf(mesh.state.assignments, { node, module })?.resolutions.find((r) => r.requirement === requirement)?.answer;

describe('assigning a module to a node', () => {
  it('is one assignment per node: a second is refused naming the first (ADR 0115)', () => {
    const mesh = baseMesh();
    const [problem] = mesh.refusal({ type: 'assign', module: 'nats', node: 'novox', hold: [], pins: {}, values: {}, placements: {} });
    expect(problem?.why).toBe('novox already runs nats, and one node runs one of each (ADR 0115)');
  });

  it('refuses an unknown module and an unknown node together', () => {
    const mesh = baseMesh();
    expect(mesh.refusal({ type: 'assign', module: 'ghost', node: 'nowhere', hold: [], pins: {}, values: {}, placements: {} }).map((p) => p.what)).toEqual(['ghost', 'nowhere']);
  });

  describe('resolves a module requirement in order', () => {
    it('1. the holder of the seat it names, even with a provider on its own node', () => {
      const mesh = baseMesh();
      mesh.register(provider('forge', 'git', { canHold: ['mesh-git'] }));
      mesh.register(provider('local-git', 'git'));
      mesh.register(consumer('ci', [{ name: 'code', contract: 'git', provider: 'module', seat: 'mesh-git' }]));
      mesh.assign('forge', 'lab1', { hold: ['mesh-git'] });
      mesh.assign('local-git', 'lab2');
      mesh.assign('ci', 'lab2');
      expect(answerOf(mesh, 'lab2', 'ci', 'code')).toEqual({ kind: 'assignment', node: 'lab1', module: 'forge', via: 'seat', seat: 'mesh-git' });
    });

    it('… and an unheld named seat is refused naming the seat and who could hold it', () => {
      const mesh = baseMesh();
      mesh.register(provider('forge', 'git', { canHold: ['mesh-git'] }));
      mesh.register(consumer('ci', [{ name: 'code', contract: 'git', provider: 'module', seat: 'mesh-git' }]));
      mesh.assign('forge', 'lab1');
      const [problem] = mesh.refusal({ type: 'assign', module: 'ci', node: 'lab2', hold: [], pins: {}, values: {}, placements: {} });
      expect(problem).toMatchObject({ what: 'requires code (git)', why: expect.stringContaining('mesh-git is unheld'), remedy: expect.stringContaining('forge') });
    });

    it('2. a pin; 3. the provider on its own node; 4. the only provider', () => {
      const mesh = baseMesh();
      mesh.register(provider('cache-a', 'cache'));
      mesh.register(provider('cache-b', 'cache'));
      mesh.register(consumer('app', [{ name: 'cache', contract: 'cache', provider: 'module' }]));
      mesh.assign('cache-a', 'lab1');
      mesh.assign('app', 'novox');
      expect(answerOf(mesh, 'novox', 'app', 'cache')).toMatchObject({ node: 'lab1', module: 'cache-a', via: 'only' });
      mesh.assign('cache-b', 'lab2');
      mesh.assign('app', 'lab2');
      expect(answerOf(mesh, 'lab2', 'app', 'cache')).toMatchObject({ node: 'lab2', module: 'cache-b', via: 'local' });
      mesh.assign('app', 'lab1', { pins: { cache: { node: 'lab2', module: 'cache-b' } } });
      expect(answerOf(mesh, 'lab1', 'app', 'cache')).toMatchObject({ node: 'lab2', module: 'cache-b', via: 'pin' });
    });

    it('5. several and none local: the candidates are listed, the seat holder first, and nothing is guessed', () => {
      const mesh = baseMesh();
      mesh.register(provider('forge', 'git', { canHold: ['mesh-git'] }));
      mesh.register(provider('mirror', 'git'));
      mesh.register(consumer('ci', [{ name: 'code', contract: 'git', provider: 'module' }]));
      mesh.assign('mirror', 'lab1');
      mesh.assign('forge', 'lab2', { hold: ['mesh-git'] });
      const [problem] = mesh.refusal({ type: 'assign', module: 'ci', node: 'novox', hold: [], pins: {}, values: {}, placements: {} });
      expect(problem?.why).toContain('2 assignments provide git');
      expect(problem?.remedy).toBe('choose one with --pin code=NODE/MODULE: lab2/forge, lab1/mirror');
    });
  });

  it('answers host requirements on its own node, directories under the node root unless placed', () => {
    const mesh = baseMesh();
    mesh.registerFixture('distribution');
    mesh.assign('distribution', 'lab2', { placements: { data: '/mnt/disk2/registry' } });
    mesh.assign('distribution', 'lab1');
    expect(answerOf(mesh, 'lab1', 'distribution', 'data')).toEqual({ kind: 'directory', path: '/var/lib/mesh/distribution/data', placed: false });
    expect(answerOf(mesh, 'lab2', 'distribution', 'data')).toEqual({ kind: 'directory', path: '/mnt/disk2/registry', placed: true });
    expect(answerOf(mesh, 'lab1', 'distribution', 'port')).toEqual({ kind: 'port', port: 5000 });
  });

  it('derives mesh requirements and takes operator values from the assignment or the default', () => {
    const mesh = baseMesh();
    mesh.registerFixture('audit-logger');
    mesh.assign('audit-logger', 'lab1');
    mesh.assign('audit-logger', 'lab2', { values: { 'retention-days': '30' } });
    expect(answerOf(mesh, 'lab1', 'audit-logger', 'retention-days')).toEqual({ kind: 'value', value: 90, from: 'default' });
    expect(answerOf(mesh, 'lab2', 'audit-logger', 'retention-days')).toEqual({ kind: 'value', value: 30, from: 'assignment' });
    expect(answerOf(mesh, 'novox', 'nats', 'identity')).toEqual({ kind: 'identity', node: 'novox', module: 'nats', name: 'novox-nats' });
    const problems = mesh.refusal({ type: 'assign', module: 'audit-logger', node: 'novox', hold: [], pins: {}, values: { 'retention-days': 'forever' }, placements: {} });
    expect(problems[0]?.why).toBe('"forever" is not a number');
  });

  it('expands a per-consumer secret into a secret named for the consumer, answered by the vault; no value in the log', () => {
    const mesh = baseMesh();
    mesh.assign('vault', 'novox', { hold: ['mesh-vault'] });
    mesh.registerFixture('postgres');
    mesh.registerFixture('catalogue');
    mesh.assign('postgres', 'novox', { hold: ['mesh-store'] });
    const [created] = mesh.assign('catalogue', 'lab1');
    const resolutions = eventOf(created, 'assignment.created').data.resolutions;
    expect(resolutions.find((r) => r.requirement === 'db-secret')?.answer).toEqual({ kind: 'secret', name: 'postgres-database/lab1-catalogue', seat: 'mesh-vault', holder: { node: 'novox', module: 'vault' } });
    expect(JSON.stringify(created)).not.toMatch(/password"\s*:\s*"/);
  });

  it('refuses, naming every unresolved requirement at once and what would answer each', () => {
    const mesh = baseMesh();
    mesh.registerFixture('postgres');
    mesh.registerFixture('telegram-sender');
    // the vault is registered but nobody holds mesh-vault, and chat-id has no default
    const problems = mesh.refusal({ type: 'assign', module: 'telegram-sender', node: 'lab1', hold: [], pins: {}, values: {}, placements: {} });
    expect(problems.map((p) => p.what)).toEqual(['requires bot-token (secret)', 'requires chat-id (an operator value)']);
    expect(problems[0]?.why).toContain('mesh-vault is unheld');
    expect(problems[0]?.remedy).toContain('vault');
    expect(problems[1]?.remedy).toBe('pass --set chat-id=VALUE');
  });

  it('refuses a secret operator value on the command line: it would enter the log', () => {
    const mesh = baseMesh();
    mesh.register(minimalModule('mailer', { requires: [bus, { name: 'smtp-password', contract: 'value', provider: 'operator', type: 'string', secret: true }] }));
    const [problem] = mesh.refusal({ type: 'assign', module: 'mailer', node: 'lab1', hold: [], pins: {}, values: { 'smtp-password': 'hunter2' }, placements: {} });
    expect(problem).toMatchObject({ what: '--set smtp-password', remedy: expect.stringContaining('vault') });
  });

  it('refuses a pin on a secret, and a module providing secret without holding mesh-vault', () => {
    const mesh = baseMesh();
    mesh.assign('vault', 'lab1', { hold: ['mesh-vault'] });
    mesh.registerFixture('telegram-sender');
    const problems = mesh.refusal({ type: 'assign', module: 'telegram-sender', node: 'lab2', hold: [], pins: { 'bot-token': { node: 'lab1', module: 'vault' } }, values: { 'chat-id': '1' }, placements: {} });
    expect(problems.map((p) => p.what)).toContain('--pin bot-token');
    expect(mesh.refusal({ type: 'assign', module: 'vault', node: 'lab2', hold: [], pins: {}, values: {}, placements: {} })[0]?.remedy).toBe('assign it with --hold mesh-vault');
  });

  it('holds a seat only if the module can, and only if nobody holds it at that scope', () => {
    const mesh = baseMesh();
    mesh.registerFixture('distribution');
    expect(mesh.refusal({ type: 'assign', module: 'distribution', node: 'lab1', hold: ['mesh-git'], pins: {}, values: {}, placements: {} })[0]?.why).toContain('does not claim it');
    const [problem] = mesh.refusal({ type: 'assign', module: 'nats', node: 'lab1', hold: ['mesh-broker'], pins: {}, values: {}, placements: {} });
    expect(problem).toMatchObject({ why: 'mesh-broker is held by novox/nats', remedy: 'assign without --hold, then: mesh seat handover mesh-broker --to lab1/nats' });
  });
});

describe('unassigning', () => {
  it('releases the seats the assignment held', () => {
    const mesh = baseMesh();
    mesh.assign('vault', 'lab1', { hold: ['mesh-vault'] });
    const events = mesh.run({ type: 'unassign', module: 'vault', node: 'lab1' });
    expect(events.map((e) => e.type)).toEqual(['assignment.removed', 'seat.released']);
    expect(holderOf(mesh.state.seats, 'mesh-vault', 'mesh')).toBeUndefined();
  });

  it('names what stops on the node, and the seats released', () => {
    const mesh = baseMesh();
    mesh.assign('vault', 'lab1', { hold: ['mesh-vault'] });
    const { summary } = decideMeshCommand({ type: 'unassign', module: 'vault', node: 'lab1' }, mesh.state);
    expect(summary).toBe('vault unassigned from lab1; stops on lab1: process vault; released mesh-vault');
    mesh.register(provider('cache', 'cache'));
    mesh.assign('cache', 'lab2');
    expect(decideMeshCommand({ type: 'unassign', module: 'cache', node: 'lab2' }, mesh.state).summary).toMatch(/^cache unassigned from lab2; stops on lab2: /);
  });

  it('refuses while another assignment is answered by it, naming them', () => {
    const mesh = baseMesh();
    mesh.register(provider('cache', 'cache'));
    mesh.register(consumer('app', [{ name: 'cache', contract: 'cache', provider: 'module' }]));
    mesh.assign('cache', 'lab1');
    mesh.assign('app', 'lab2');
    expect(mesh.refusal({ type: 'unassign', module: 'cache', node: 'lab1' }).map((p) => p.what)).toEqual(['lab2/app']);
    expect(mesh.refusal({ type: 'unassign', module: 'cache', node: 'novox' })[0]?.remedy).toBe('it runs on: lab1');
  });
});
