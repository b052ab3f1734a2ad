import nacl from 'tweetnacl';
import { fromBase64, toBase64 } from './key-files.js';

// Sealing a value to one recipient's public key (tweetnacl box with a fresh sender key pair):
// only the holder of the recipient's secret key can open it.

export interface Sealed {
  nonce: string;
  senderPublicKey: string;
  box: string;
}

export const seal = (plaintext: string, recipientPublicKey: string): Sealed => {
  const sender = nacl.box.keyPair();
  const nonce = nacl.randomBytes(nacl.box.nonceLength);
  const box = nacl.box(new TextEncoder().encode(plaintext), nonce, fromBase64(recipientPublicKey), sender.secretKey);
  return { nonce: toBase64(nonce), senderPublicKey: toBase64(sender.publicKey), box: toBase64(box) };
};

/** The plaintext, or undefined when this key cannot open it. */
export const open = (sealed: Sealed, recipientSecretKey: string): string | undefined => {
  const opened = nacl.box.open(fromBase64(sealed.box), fromBase64(sealed.nonce), fromBase64(sealed.senderPublicKey), fromBase64(recipientSecretKey));
  return opened ? new TextDecoder().decode(opened) : undefined;
};

export const newKeyPair = (): { publicKey: string; secretKey: string } => {
  const pair = nacl.box.keyPair();
  return { publicKey: toBase64(pair.publicKey), secretKey: toBase64(pair.secretKey) };
};

// Sealing to a key the mesh already names: the controller's and each operator's are ed25519 keys
// (they sign), and an ed25519 key is a point of the same curve a box key is on (RFC 7748 §4.1,
// the birational map). So a value can be sealed to a signing key's public half and opened with its
// secret half, without a second key to make, publish and keep — as libsodium's
// crypto_sign_ed25519_pk_to_curve25519 and age's ssh-ed25519 recipients do.

const P = 2n ** 255n - 19n;

const modPow = (base: bigint, exponent: bigint): bigint => {
  let result = 1n;
  let b = base % P;
  for (let e = exponent; e > 0n; e >>= 1n) {
    if (e & 1n) result = (result * b) % P;
    b = (b * b) % P;
  }
  return result;
};

const littleEndian = (bytes: Uint8Array): bigint => bytes.reduceRight((n, byte) => (n << 8n) | BigInt(byte), 0n);

/** The box public key of an ed25519 public key (base64 both): u = (1 + y) / (1 − y) mod p. */
export const boxKeyOfSigningKey = (signingPublicKey: string): string => {
  const raw = fromBase64(signingPublicKey);
  if (raw.length !== 32) throw new Error('an ed25519 public key is 32 bytes');
  const y = littleEndian(Uint8Array.from(raw, (byte, i) => (i === 31 ? byte & 0x7f : byte)));
  const u = (((1n + y) % P) * modPow((P + 1n - y) % P, P - 2n)) % P;
  const out = new Uint8Array(32);
  for (let i = 0, n = u; i < 32; i++, n >>= 8n) out[i] = Number(n & 0xffn);
  return toBase64(out);
};

/** The box secret key of an ed25519 key (its 64-byte secret, base64): the scalar its signatures use. */
export const boxSecretOfSigningKey = (signingSecretKey: string): string => {
  const scalar = nacl.hash(fromBase64(signingSecretKey).subarray(0, 32)).subarray(0, 32);
  scalar[0]! &= 248;
  scalar[31]! &= 127;
  scalar[31]! |= 64;
  return toBase64(scalar);
};

/** Sealed to the holder of an ed25519 key, by its public half. */
export const sealToSigner = (plaintext: string, signingPublicKey: string): Sealed => seal(plaintext, boxKeyOfSigningKey(signingPublicKey));

/** Opened with an ed25519 key's secret half; undefined when it was sealed to another. */
export const openAsSigner = (sealed: Sealed, signingSecretKey: string): string | undefined => open(sealed, boxSecretOfSigningKey(signingSecretKey));
