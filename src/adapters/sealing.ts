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
