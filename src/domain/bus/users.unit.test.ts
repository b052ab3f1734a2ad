import { describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../../config.js';
import { foldSnapshotWriterIdentity, identityFromSeed, moduleBusIdentity } from '../../adapters/identity.js';
import { renderBusUsers } from '../../adapters/nats/bus-users-file.js';
import { DEMO_MODULES, FIXTURE_MODULES, MeshFixture } from '../../../tests/helpers/given.js';
import { tokenVerifier } from '../nodes/enrolment.js';
import { composeBusUsers, type BusWire } from './users.js';
import { consumedSubjects } from './subjects.js';

// The composed user list for the fixture catalogue, as a golden file: a grant nobody declared —
// added by hand to the composer or to the file — shows up here as a difference.

const GOLDEN = join(projectRoot, 'fixtures', 'permissions', 'bus-users.conf');
const WIRE: BusWire = { prefix: 'mesh', logStream: 'LOG', logPrefix: 'mesh.log', nodesStream: 'NODES', controlStream: 'CONTROL', eventsStream: 'EVENTS' };
const key = (n: number) => identityFromSeed(new Uint8Array(32).fill(n));
const controller = key(1);

const catalogueMesh = (): MeshFixture => {
  const mesh = new MeshFixture().node('alpha').node('beta');
  for (const name of [...FIXTURE_MODULES, ...DEMO_MODULES]) mesh.registerFixture(name);
  mesh.run({ type: 'add-operator', operator: 'ada', publicKey: key(2).publicKey });
  mesh.run({ type: 'add-operator', operator: 'bob', publicKey: key(3).publicKey });
  mesh.run({ type: 'revoke-operator', operator: 'bob' });
  mesh.assign('local-bus', 'alpha', { hold: ['mesh-broker'] });
  mesh.assign('vault', 'alpha', { hold: ['mesh-vault'] });
  mesh.assign('greeter', 'alpha', { hold: ['front-desk'] });
  mesh.assign('caller', 'beta');
  mesh.assign('telegram-sender', 'beta', { hold: ['telegram-sender'], values: { 'chat-id': '1' } });
  mesh.assign('showcase', 'beta');
  mesh.assign('audit-logger', 'beta');
  mesh.run({ type: 'issue-enrolment-token', tokenId: '00000000000000aa', verifier: tokenVerifier('x'), publicKey: key(4).publicKey, node: 'alpha', expiresAt: '2030-01-01T00:00:00.000Z' });
  mesh.run({ type: 'enrol-node', node: 'alpha', tokenId: '00000000000000aa', secret: 'x', publicKey: key(5).publicKey, busKey: key(6).publicKey, now: '2029-01-01T00:00:00.000Z' });
  mesh.run({ type: 'issue-enrolment-token', tokenId: '00000000000000bb', verifier: '0'.repeat(64), publicKey: key(7).publicKey, node: 'beta', expiresAt: '2030-01-01T00:00:00.000Z' });
  mesh.run({ type: 'issue-enrolment-token', tokenId: '00000000000000cc', verifier: '0'.repeat(64), publicKey: key(8).publicKey, node: null, expiresAt: '2020-01-01T00:00:00.000Z' });
  return mesh;
};

const compose = (mesh: MeshFixture, now = new Date('2029-06-01T00:00:00.000Z')) =>
  composeBusUsers(mesh.state, { wire: WIRE, controllerKey: controller.publicKey, snapshotWriterKey: foldSnapshotWriterIdentity(controller).publicKey, moduleKey: (node, module) => moduleBusIdentity(controller, node, module).publicKey, now });

describe('the bus user list, composed from the log', () => {
  it('is the golden file for the fixture catalogue', () => {
    const actual = renderBusUsers(compose(catalogueMesh()));
    if (process.env.MESH_UPDATE_GOLDEN === '1' || !existsSync(GOLDEN)) writeFileSync(GOLDEN, actual);
    expect(actual).toBe(readFileSync(GOLDEN, 'utf8'));
  });

  it('gives each identity its own user and nothing a declaration does not imply', () => {
    const users = compose(catalogueMesh());
    const names = users.map((u) => u.name);
    expect(names).toEqual([
      'controller',
      'controller (fold snapshots)',
      'operator ada',
      'host alpha',
      'enrolment token 00000000000000aa',
      'enrolment token 00000000000000bb',
      'module greeter on alpha',
      'module vault on alpha',
      'module audit-logger on beta',
      'module showcase on beta',
      'module telegram-sender on beta',
    ]);
    // no user may read every inbox; only the controller may answer into any
    for (const user of users) expect(user.permissions.subscribe.allow).not.toContain('_INBOX.>');
    expect(users.filter((u) => u.permissions.publish.allow.includes('_INBOX.>')).map((u) => u.name)).toEqual(['controller']);
    // caller and local-bus do not require mesh-bus: no user; a revoked operator and an expired token: none
    expect(names.some((n) => /caller|local-bus|bob|00000000000000cc/.test(n))).toBe(false);
    const greeter = users.find((u) => u.name === 'module greeter on alpha');
    // a provider answers its consumers as itself, on its own subject alone
    expect(greeter?.permissions.publish.allow).toEqual(['mesh.mod.greeter.event.greeted', 'mesh.seat.front-desk.>', 'mesh.seat.mesh-controller.tool.answer-consumer.alpha.greeter']);
    expect(greeter?.permissions.subscribe.allow).toEqual(['_INBOX.greeter.alpha.>', 'mesh.seat.front-desk.>']);
    const showcase = users.find((u) => u.name === 'module showcase on beta');
    // a user of a seat submits to its accept subjects only; a consumer acks only its own consumer
    expect(showcase?.permissions.publish.allow).toContain('mesh.seat.telegram-sender.accept.send');
    expect(showcase?.permissions.publish.allow).toContain('$JS.ACK.EVENTS.beta_showcase.>');
    expect(showcase?.permissions.allowResponses).toBe(false);
    const host = users.find((u) => u.name === 'host alpha');
    // its reports, its own declaration, and asking for its modules' identities and secrets (sealed to whoever they belong to)
    expect(host?.permissions.publish.allow).toEqual(['mesh.control.alpha.>', '$JS.API.DIRECT.GET.NODES.mesh.node.alpha.declare', 'mesh.seat.mesh-controller.tool.bus-identity', 'mesh.seat.mesh-vault.tool.fetch']);
    // the vault's holder serves its seat's tools and reads the log's first commit (the controller's key), nothing more of the log
    const vault = users.find((u) => u.name === 'module vault on alpha');
    expect(vault?.permissions.subscribe.allow).toContain('mesh.seat.mesh-vault.>');
    expect(vault?.permissions.publish.allow.filter((s) => s.startsWith('$JS.'))).toEqual(['$JS.API.STREAM.MSG.GET.LOG']);
    expect(vault?.permissions.allowResponses).toBe(true);
    const controllerUser = users[0];
    expect(controllerUser?.permissions.publish.deny).toEqual(['$JS.API.STREAM.DELETE.>', '$JS.API.STREAM.PURGE.>', '$JS.API.STREAM.MSG.DELETE.>']);
    // the snapshot writer may purge its own bucket's stream (a snapshot replaced) and touch no other
    const snapshots = users[1];
    expect(snapshots?.permissions.publish.allow.filter((subject) => subject.includes('PURGE'))).toEqual(['$JS.API.STREAM.PURGE.OBJ_mesh-fold-snapshots']);
    expect(snapshots?.permissions.publish.allow.every((subject) => subject === '$JS.API.INFO' || subject.includes('mesh-fold-snapshots'))).toBe(true);
    // and nobody else may write into the bucket
    for (const user of users.slice(2)) expect(user.permissions.publish.allow.some((subject) => subject.startsWith('$O.') || /^\$JS\.API\.STREAM\.(CREATE|UPDATE|PURGE|DELETE|MSG\.DELETE)\./.test(subject))).toBe(false);
  });

  it('drops a token’s user once it expires, and a module’s when it is unassigned', () => {
    const mesh = catalogueMesh();
    expect(compose(mesh, new Date('2031-01-01T00:00:00.000Z')).some((u) => u.kind === 'enrolment')).toBe(false);
    mesh.run({ type: 'unassign', module: 'audit-logger', node: 'beta' });
    expect(compose(mesh).some((u) => u.name === 'module audit-logger on beta')).toBe(false);
  });

  it('says "nothing to publish" as a deny, since an empty allow list is no limit to nats-server', () => {
    const users = compose(catalogueMesh());
    const silent = { ...users[1]!, permissions: { ...users[1]!.permissions, publish: { allow: [] } } };
    expect(renderBusUsers([silent])).toContain('publish: { deny: [">"] }');
  });

  it('derives consumed subjects from local names, `*` one name and `**` the rest', () => {
    expect(consumedSubjects('mesh', ['gitea.pull.merged', 'telegram-sender.**', '*.download.completed'])).toEqual([
      'mesh.mod.*.event.download.completed',
      'mesh.mod.gitea.event.pull.merged',
      'mesh.mod.telegram-sender.event.>',
    ]);
    expect(consumedSubjects('mesh', ['**'])).toEqual(['mesh.mod.*.event.>', 'mesh.seat.*.event.>']);
  });
});
