import { describe, expect, it } from '@jest/globals';
import nacl from 'tweetnacl';
import { newIdentity } from './identity.js';
import { fromBase64, toBase64 } from './key-files.js';
import { boxKeyOfSigningKey, boxSecretOfSigningKey, openAsSigner, sealToSigner } from './sealing.js';

// A value sealed to an ed25519 key's public half opens with its secret half, and with no other.

describe('sealing to a signing key', () => {
  it('maps an ed25519 key to the box key pair its secret half makes', () => {
    for (let i = 0; i < 8; i++) {
      const key = newIdentity();
      const secret = boxSecretOfSigningKey(key.secretKey);
      expect(boxKeyOfSigningKey(key.publicKey)).toBe(toBase64(nacl.scalarMult.base(fromBase64(secret))));
    }
  });

  it('opens for the key it was sealed to alone', () => {
    const holder = newIdentity();
    const other = newIdentity();
    const sealed = sealToSigner('a value', holder.publicKey);
    expect(openAsSigner(sealed, holder.secretKey)).toBe('a value');
    expect(openAsSigner(sealed, other.secretKey)).toBeUndefined();
  });
});
