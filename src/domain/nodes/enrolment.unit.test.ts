import { describe, expect, it } from '@jest/globals';
import { MeshFixture } from '../../../tests/helpers/given.js';
import { tokenVerifier } from './enrolment.js';
import { enrolmentToken, nodeNamed } from './state.js';

const KEY = 'A'.repeat(43) + '=';
const TOKEN = '0123456789abcdef';

const withToken = (node: string | null, expiresAt = '2099-01-01T00:00:00.000Z'): MeshFixture => {
  const mesh = new MeshFixture({ systemSeats: false });
  mesh.run({ type: 'issue-enrolment-token', tokenId: TOKEN, verifier: tokenVerifier('secret'), node, expiresAt });
  return mesh;
};

const enrol = (node: string, secret = 'secret', now = '2026-01-01T00:00:00.000Z') => ({ type: 'enrol-node' as const, node, tokenId: TOKEN, secret, publicKey: KEY, now });

describe('nodes and their enrolment', () => {
  it('a node added keeps its root; adding it again elsewhere is refused', () => {
    const mesh = new MeshFixture({ systemSeats: false }).node('alpha', '/srv/mesh');
    expect(nodeNamed(mesh.state.nodes, 'alpha')).toEqual({ name: 'alpha', root: '/srv/mesh', address: null });
    expect(mesh.refusal({ type: 'add-node', node: 'alpha', root: '/elsewhere' })).toEqual([expect.objectContaining({ why: 'node alpha exists with root /srv/mesh' })]);
  });

  it('a token is spent once, by the node it names, before it expires', () => {
    const mesh = withToken('alpha');
    expect(mesh.refusal(enrol('beta'))).toEqual([expect.objectContaining({ why: 'the token was made for node alpha' })]);
    expect(mesh.refusal(enrol('alpha', 'guess'))).toEqual([expect.objectContaining({ why: 'the token is not one the mesh made' })]);
    mesh.run(enrol('alpha'));
    expect(enrolmentToken(mesh.state.nodes, TOKEN)?.spentBy).toBe('alpha');
    expect(nodeNamed(mesh.state.nodes, 'alpha')?.publicKey).toBe(KEY);
    expect(mesh.refusal(enrol('alpha')).map((p) => p.why)).toEqual(['the token was already spent, by node alpha', 'node alpha is already enrolled']);
    expect(withToken(null, '2025-01-01T00:00:00.000Z').refusal(enrol('gamma'))).toEqual([expect.objectContaining({ why: 'the token expired at 2025-01-01T00:00:00.000Z' })]);
  });
});
