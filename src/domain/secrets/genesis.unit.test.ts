import { describe, expect, it } from '@jest/globals';
import { MeshFixture, stored } from '../../../tests/helpers/given.js';
import type { Decision } from '../decision.js';
import { evolveMesh } from '../mesh/state.js';
import { Refusal } from '../refusal.js';
import { secretAggregate } from './events.js';
import { awaitingHandOver, decideFoundSecret, decideHandedOver } from './genesis.js';
import { secretNamed } from './state.js';

// The mesh's own secrets as the rules decide them: recorded once at genesis, handed to whoever
// holds mesh-vault now — again when another holds it — and refused where they do not belong.

const OWN = { secret: 'mesh/postgres-reader', purpose: 'the reader', version: 1, sealedTo: [{ name: 'controller', key: 'k1' }, { name: 'operator:ada', key: 'k2' }] };

const apply = (mesh: MeshFixture, decision: Decision): void => {
  for (const event of decision.events) evolveMesh(mesh.state, stored(decision.aggregate, event));
};

const vaultMesh = (): MeshFixture => {
  const mesh = new MeshFixture().node('alpha').node('beta');
  mesh.register({ name: 'test-vault', provides: [{ provision: 'secret' }], canHold: ['mesh-vault'], resources: {} });
  return mesh;
};

describe('the mesh’s own secrets', () => {
  it('are recorded once, and wait for a holder of mesh-vault before anything is handed over', () => {
    const mesh = vaultMesh();
    apply(mesh, decideFoundSecret(OWN, mesh.state));
    expect(decideFoundSecret(OWN, mesh.state).events).toEqual([]);
    expect(secretNamed(mesh.state.secrets, OWN.secret)).toMatchObject({ origin: 'genesis', recipients: ['controller', 'operator:ada'], handedOver: null, rotation: null });
    expect(awaitingHandOver(mesh.state)).toEqual([]);
    mesh.assign('test-vault', 'alpha', { hold: ['mesh-vault'] });
    expect(awaitingHandOver(mesh.state)).toEqual([{ secret: OWN.secret, purpose: OWN.purpose, version: 1, vault: { node: 'alpha', module: 'test-vault' } }]);
  });

  it('are handed over once, and again to the next holder of mesh-vault', () => {
    const mesh = vaultMesh();
    apply(mesh, decideFoundSecret(OWN, mesh.state));
    mesh.assign('test-vault', 'alpha', { hold: ['mesh-vault'] });
    apply(mesh, decideHandedOver(mesh.state, OWN.secret, 1, { node: 'alpha', module: 'test-vault' }));
    expect(awaitingHandOver(mesh.state)).toEqual([]);
    expect(decideHandedOver(mesh.state, OWN.secret, 1, { node: 'alpha', module: 'test-vault' }).events).toEqual([]);
    mesh.run({ type: 'unassign', module: 'test-vault', node: 'alpha' });
    mesh.assign('test-vault', 'beta', { hold: ['mesh-vault'] });
    expect(awaitingHandOver(mesh.state).map((a) => a.vault)).toEqual([{ node: 'beta', module: 'test-vault' }]);
  });

  it('are refused under another name, over a secret the vault made, or handed over when the vault made it', () => {
    const mesh = vaultMesh();
    expect(() => decideFoundSecret({ ...OWN, secret: 'postgres-reader' }, mesh.state)).toThrow(/the mesh's own secrets are named mesh\/…/);
    evolveMesh(mesh.state, stored(secretAggregate('mesh/taken'), { type: 'secret.made', data: { secret: 'mesh/taken', purpose: 'p', recipients: ['alpha'], version: 1 } }));
    expect(() => decideFoundSecret({ ...OWN, secret: 'mesh/taken' }, mesh.state)).toThrow(Refusal);
    expect(() => decideHandedOver(mesh.state, 'mesh/taken', 1, { node: 'alpha', module: 'test-vault' })).toThrow(/it is not one of the mesh's own secrets: the vault made it/);
  });
});
