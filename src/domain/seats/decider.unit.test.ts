import { describe, expect, it } from '@jest/globals';
import { MeshFixture, minimalModule } from '../../../tests/helpers/given.js';
import { assignmentOf } from '../assignments/state.js';
import { allSeats, holderOf, seatNamed } from './state.js';
import { SYSTEM_SEATS } from './system-seats.js';

const meshWithGitea = (): MeshFixture => {
  const mesh = new MeshFixture().node('novox').node('lab1');
  for (const name of ['nats', 'vault', 'postgres', 'gitea']) mesh.registerFixture(name);
  mesh.assign('nats', 'novox', { hold: ['mesh-broker'] });
  mesh.assign('vault', 'novox', { hold: ['mesh-vault'] });
  mesh.assign('postgres', 'novox', { hold: ['mesh-store'] });
  mesh.assign('gitea', 'novox', { hold: ['mesh-git'] });
  return mesh;
};

describe('the mesh’s own seats', () => {
  it('are data defined by events at genesis, named for their scope, each naming its record', () => {
    const mesh = new MeshFixture();
    expect([...allSeats(mesh.state.seats)].length).toBe(16);
    for (const seat of SYSTEM_SEATS) {
      expect(seat.name.startsWith(seat.scope === 'mesh' ? 'mesh-' : 'node-')).toBe(true);
      expect(seat.decided).toMatch(/ADR/);
    }
    expect(seatNamed(mesh.state.seats, 'mesh-broker')?.delivers).toBe('mesh-bus');
    expect(seatNamed(mesh.state.seats, 'mesh-vault')).toMatchObject({ delivers: 'secret', reserved: true });
    expect(mesh.run({ type: 'define-system-seat', seat: SYSTEM_SEATS[0] as (typeof SYSTEM_SEATS)[number] })).toEqual([]);
  });
});

describe('handing a seat over', () => {
  it('is one event from the current holder to the new one: the seat is never unheld in between', () => {
    const mesh = meshWithGitea();
    mesh.registerFixture('distribution');
    const forge = minimalModule('forgejo', { provides: [{ provision: 'git' }], canHold: ['mesh-git'] });
    mesh.register(forge);
    mesh.assign('forgejo', 'lab1');
    const events = mesh.run({ type: 'hand-over-seat', seat: 'mesh-git', to: { node: 'lab1', module: 'forgejo' } });
    expect(events).toEqual([{ type: 'seat.handed-over', data: { seat: 'mesh-git', scopeKey: 'mesh', from: { node: 'novox', module: 'gitea' }, to: { node: 'lab1', module: 'forgejo' } } }]);
    expect(holderOf(mesh.state.seats, 'mesh-git', 'mesh')).toEqual({ node: 'lab1', module: 'forgejo' });
  });

  it('refuses an expectation that no longer holds: of two handovers decided at once, one wins', () => {
    const mesh = meshWithGitea();
    for (const name of ['forge-a', 'forge-b']) {
      mesh.register(minimalModule(name, { provides: [{ provision: 'git' }], canHold: ['mesh-git'] }));
      mesh.assign(name, 'lab1');
    }
    const seenHolder = { node: 'novox', module: 'gitea' };
    mesh.run({ type: 'hand-over-seat', seat: 'mesh-git', to: { node: 'lab1', module: 'forge-a' }, expectedHolder: seenHolder });
    const [problem] = mesh.refusal({ type: 'hand-over-seat', seat: 'mesh-git', to: { node: 'lab1', module: 'forge-b' }, expectedHolder: seenHolder });
    expect(problem?.why).toContain('held by lab1/forge-a now, not by novox/gitea');
  });

  it('refuses a module that cannot hold the seat, naming why — unclaimed, not providing, missing verbs', () => {
    const mesh = meshWithGitea();
    mesh.register(minimalModule('plain'));
    mesh.assign('plain', 'lab1');
    const [unclaimed] = mesh.refusal({ type: 'hand-over-seat', seat: 'mesh-catalog', to: { node: 'lab1', module: 'plain' } });
    expect(unclaimed?.why).toContain('does not claim it');

    mesh.register(minimalModule('fake-forge', { canHold: ['mesh-catalog'] }));
    mesh.registerFixture('telegram-sender');
    mesh.register(minimalModule('quiet-sender', { canHold: ['telegram-sender'], tools: [] }));
    mesh.assign('quiet-sender', 'lab1');
    const [verbs] = mesh.refusal({ type: 'hand-over-seat', seat: 'telegram-sender', to: { node: 'lab1', module: 'quiet-sender' } });
    expect(verbs?.why).toContain('does not serve status');
  });

  it('refuses an assignment that does not exist, and a seat that does not', () => {
    const mesh = meshWithGitea();
    expect(mesh.refusal({ type: 'hand-over-seat', seat: 'mesh-git', to: { node: 'lab1', module: 'gitea' } })[0]?.remedy).toContain('mesh assign gitea lab1');
    expect(mesh.refusal({ type: 'hand-over-seat', seat: 'mesh-forge', to: { node: 'novox', module: 'gitea' } })[0]?.why).toBe('no such seat');
  });

  it('keeps one holder per node for a node-scoped seat', () => {
    const mesh = new MeshFixture().node('a').node('b');
    mesh.registerFixture('nats');
    mesh.assign('nats', 'a', { hold: ['mesh-broker'] });
    mesh.registerFixture('telegram-sender');
    mesh.registerFixture('showcase');
    mesh.assign('showcase', 'a', { hold: ['showcase'] });
    mesh.assign('showcase', 'b', { hold: ['showcase'] });
    expect(holderOf(mesh.state.seats, 'showcase', 'a')).toEqual({ node: 'a', module: 'showcase' });
    expect(holderOf(mesh.state.seats, 'showcase', 'b')).toEqual({ node: 'b', module: 'showcase' });
  });
});

describe('renaming a seat', () => {
  it('is one event; the old name keeps resolving, for claims registered later too', () => {
    const mesh = meshWithGitea();
    expect(mesh.run({ type: 'rename-seat', seat: 'mesh-git', to: 'mesh-forge' })).toEqual([{ type: 'seat.renamed', data: { seat: 'mesh-git', from: 'mesh-git', to: 'mesh-forge' } }]);
    expect(seatNamed(mesh.state.seats, 'mesh-git')?.name).toBe('mesh-forge');
    expect(holderOf(mesh.state.seats, 'mesh-git', 'mesh')).toEqual({ node: 'novox', module: 'gitea' });
    // A manifest written with the old name still registers and still resolves.
    mesh.register(minimalModule('old-style', { requires: [{ name: 'bus', contract: 'mesh-bus', provider: 'module', seat: 'mesh-broker' }, { name: 'code', contract: 'git', provider: 'module', seat: 'mesh-git' }] }));
    mesh.assign('old-style', 'lab1');
    expect(assignmentOf(mesh.state.assignments, { node: 'lab1', module: 'old-style' })?.resolutions.find((r) => r.requirement === 'code')?.answer).toMatchObject({ node: 'novox', module: 'gitea', via: 'seat' });
  });

  it('refuses a taken name and a name that breaks the scope rule', () => {
    const mesh = meshWithGitea();
    expect(mesh.refusal({ type: 'rename-seat', seat: 'mesh-git', to: 'mesh-vault' })[0]?.why).toContain('taken by seat mesh-vault');
    expect(mesh.refusal({ type: 'rename-seat', seat: 'mesh-git', to: 'forge' })[0]?.why).toContain('starts with mesh-');
    mesh.registerFixture('telegram-sender');
    expect(mesh.refusal({ type: 'rename-seat', seat: 'telegram-sender', to: 'mesh-telegram' })[0]?.why).toContain("mesh's own seats");
  });
});
