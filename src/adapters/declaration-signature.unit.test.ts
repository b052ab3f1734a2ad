import { describe, expect, it } from '@jest/globals';
import { newIdentity, signBytes } from './identity.js';
import { declarationSignatureHolds, declarationSignatureProblem, signDeclaration } from './declaration-signature.js';

const body = Buffer.from(JSON.stringify({ node: 'beta', sequence: 3, digest: `sha256:${'a'.repeat(64)}`, derivedFromSeq: 9, assignments: [] }));

describe('a declaration signature', () => {
  const controller = newIdentity();

  it('holds over the exact bytes signed', () => {
    const sig = signDeclaration(controller, body);
    expect(declarationSignatureHolds(controller.publicKey, body, sig)).toBe(true);
    expect(declarationSignatureProblem(controller.publicKey, body, sig)).toBeUndefined();
  });

  it('fails when any one byte changes', () => {
    const sig = signDeclaration(controller, body);
    for (const at of [0, 10, body.length - 1]) {
      const changed = Buffer.from(body);
      changed[at] = (changed[at] ?? 0) ^ 1;
      expect(declarationSignatureHolds(controller.publicKey, changed, sig)).toBe(false);
    }
    const sigBytes = Buffer.from(sig, 'base64');
    sigBytes[5] = (sigBytes[5] ?? 0) ^ 1;
    expect(declarationSignatureHolds(controller.publicKey, body, sigBytes.toString('base64'))).toBe(false);
  });

  it('fails under another key, and names what is missing or wrong', () => {
    const other = newIdentity();
    expect(declarationSignatureProblem(controller.publicKey, body, signDeclaration(other, body))).toMatch(/not signed by the controller: its signature does not verify/);
    expect(declarationSignatureProblem(controller.publicKey, body, undefined)).toMatch(/not signed by the controller: it carries no Mesh-Declaration-Signature/);
    expect(declarationSignatureProblem(controller.publicKey, body, 'not base64 at all')).toMatch(/does not verify/);
  });

  it('is not any other signature of the controller over the same bytes (domain separated)', () => {
    expect(declarationSignatureHolds(controller.publicKey, body, signBytes(controller, body))).toBe(false);
  });
});
