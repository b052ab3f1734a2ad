import { describe, expect, it } from '@jest/globals';
import { MeshFixture } from '../../../tests/helpers/given.js';
import { allOperators, operatorNamed } from './state.js';

const key = (letter: string): string => letter.repeat(43) + '=';

describe('operators', () => {
  it('are told apart by name, and a name is never given twice, even after a revocation', () => {
    const mesh = new MeshFixture({ systemSeats: false });
    mesh.run({ type: 'add-operator', operator: 'ada', publicKey: key('A') });
    mesh.run({ type: 'add-operator', operator: 'bob', publicKey: key('B') });
    mesh.run({ type: 'revoke-operator', operator: 'bob' });
    expect(operatorNamed(mesh.state.operators, 'bob')).toEqual({ operator: 'bob', publicKey: key('B'), revoked: true });
    expect(mesh.refusal({ type: 'add-operator', operator: 'bob', publicKey: key('C') })).toEqual([expect.objectContaining({ why: 'operator bob was revoked' })]);
    expect([...allOperators(mesh.state.operators)].map((o) => o.operator)).toEqual(['ada', 'bob']);
  });

  it('the last operator who is not revoked cannot be revoked: somebody must be able to command the mesh', () => {
    const mesh = new MeshFixture({ systemSeats: false });
    mesh.run({ type: 'add-operator', operator: 'ada', publicKey: key('A') });
    expect(mesh.refusal({ type: 'revoke-operator', operator: 'ada' })).toEqual([expect.objectContaining({ remedy: 'add another operator first' })]);
  });
});
