import { describe, expect, it } from '@jest/globals';
import nacl from 'tweetnacl';
import { nkeyAuthenticator } from '@nats-io/nats-core';
import { fromPublic, Prefix } from '@nats-io/nkeys';
import { Codec } from '@nats-io/nkeys/lib/codec.js';
import { busAuthenticator, identityFromSeed, newIdentity, signBytes, verifyBytes } from './identity.js';

// Keys are made with Node's own ed25519 now: every key file made before, and every signature in a
// log, must read the same. tweetnacl stays here only as the witness of what they were.

describe('keys made with node:crypto', () => {
  it('are the keys tweetnacl made from the same seed, in the same file layout, with the same signatures', () => {
    for (let i = 0; i < 30; i++) {
      const seed = nacl.randomBytes(32);
      const ours = identityFromSeed(seed);
      const before = nacl.sign.keyPair.fromSeed(seed);
      expect(ours.publicKey).toBe(Buffer.from(before.publicKey).toString('base64'));
      expect(ours.secretKey).toBe(Buffer.from(before.secretKey).toString('base64'));
      const message = nacl.randomBytes(1 + i);
      const signature = Buffer.from(nacl.sign.detached(message, before.secretKey)).toString('base64');
      expect(signBytes(ours, message)).toBe(signature);
      expect(verifyBytes(ours.publicKey, message, signature)).toBe(true);
      message[0] = message[0]! ^ 1;
      expect(verifyBytes(ours.publicKey, message, signature)).toBe(false);
    }
  });

  it('makes a fresh key each time, whose signatures tweetnacl accepts', () => {
    const a = newIdentity();
    const b = newIdentity();
    expect(a.publicKey).not.toBe(b.publicKey);
    const message = new TextEncoder().encode('mesh');
    const signature = Buffer.from(signBytes(a, message), 'base64');
    expect(nacl.sign.detached.verify(message, signature, Buffer.from(a.publicKey, 'base64'))).toBe(true);
  });

  it('refuses a seed that is not 32 bytes', () => {
    expect(() => identityFromSeed(new Uint8Array(31))).toThrow(/32 bytes/);
  });

  it("answers a server's nonce as the NATS client's own nkey authenticator does, and only for its own key", () => {
    for (let i = 0; i < 10; i++) {
      const identity = newIdentity();
      const nonce = `nonce-${i}-${identity.publicKey.slice(0, 8)}`;
      const theirs = nkeyAuthenticator(Codec.encodeSeed(Prefix.User, Buffer.from(identity.secretKey, 'base64').subarray(0, 32)))(nonce) as { nkey: string; sig: string };
      const ours = busAuthenticator(identity)(nonce) as { nkey: string; sig: string };
      expect(ours).toEqual(theirs);
      expect(fromPublic(ours.nkey).verify(new TextEncoder().encode(nonce), Buffer.from(ours.sig, 'base64'))).toBe(true);
      expect(fromPublic(ours.nkey).verify(new TextEncoder().encode(`${nonce}!`), Buffer.from(ours.sig, 'base64'))).toBe(false);
      expect(ours.nkey).not.toBe((busAuthenticator(newIdentity())(nonce) as { nkey: string }).nkey);
    }
  });
});

