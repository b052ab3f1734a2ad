import { describe, expect, it } from '@jest/globals';
import { identityFromSeed } from '../../adapters/identity.js';
import { MeshFixture } from '../../../tests/helpers/given.js';
import { tokenVerifier } from '../nodes/enrolment.js';
import { busIdentityProblems, moduleBusGrant } from './module-identity.js';

// Who may be handed a module's bus identity: the node it is assigned to, once enrolled, for a
// module that requires mesh-bus. Every problem is named at once.

const key = (n: number) => identityFromSeed(new Uint8Array(32).fill(n)).publicKey;

const mesh = (): MeshFixture => {
  const fixture = new MeshFixture().node('alpha').node('beta');
  for (const name of ['local-bus', 'audit-logger', 'caller', 'greeter']) fixture.registerFixture(name);
  fixture.assign('local-bus', 'alpha', { hold: ['mesh-broker'] });
  fixture.assign('audit-logger', 'alpha');
  fixture.assign('greeter', 'alpha', { hold: ['front-desk'] });
  fixture.assign('caller', 'alpha');
  fixture.run({ type: 'issue-enrolment-token', tokenId: '00000000000000aa', verifier: tokenVerifier('x'), publicKey: key(4), node: 'alpha', expiresAt: '2030-01-01T00:00:00.000Z' });
  fixture.run({ type: 'enrol-node', node: 'alpha', tokenId: '00000000000000aa', secret: 'x', publicKey: key(5), busKey: key(6), now: '2029-01-01T00:00:00.000Z' });
  return fixture;
};

describe("handing out a module's bus identity", () => {
  it('may, for a module that requires mesh-bus, assigned to the enrolled node that asks', () => {
    expect(busIdentityProblems(mesh().state, { node: 'alpha', module: 'audit-logger' })).toEqual([]);
  });

  it('refuses a module not assigned to that node, a node not enrolled, and says both at once', () => {
    expect(busIdentityProblems(mesh().state, { node: 'beta', module: 'audit-logger' }).map((p) => [p.what, p.why])).toEqual([
      ['node beta', 'it has not enrolled, so there is no key to seal its module identities to'],
      ['beta/audit-logger', 'module audit-logger is not assigned to node beta'],
    ]);
  });

  it('refuses a node the mesh does not know, and a module with no place on the bus', () => {
    expect(busIdentityProblems(mesh().state, { node: 'gamma', module: 'x' }).map((p) => p.why)).toEqual(['the mesh has no such node', 'module x is not assigned to node gamma']);
    expect(busIdentityProblems(mesh().state, { node: 'alpha', module: 'caller' }).map((p) => p.why)).toEqual(['module caller does not require mesh-bus, so it has no identity on the bus']);
  });

  it('gives the module its own inbox and the subjects its consumes derive, under the mesh’s prefix', () => {
    expect(moduleBusGrant(mesh().state, 'mesh', 'alpha', 'audit-logger')).toEqual({ inbox: '_INBOX.audit-logger.alpha', subjects: ['mesh.mod.*.event.>', 'mesh.seat.*.event.>'] });
    expect(moduleBusGrant(mesh().state, 't1', 'alpha', 'greeter')).toEqual({ inbox: '_INBOX.greeter.alpha', subjects: [] });
  });
});
