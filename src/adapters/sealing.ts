import nacl from 'tweetnacl';

// Sealing a value to one recipient's public key (tweetnacl box with a fresh sender key pair):
// only the holder of the recipient's secret key can open it.

const b64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64');
const bytes = (text: string): Uint8Array => new Uint8Array(Buffer.from(text, 'base64'));

export interface Sealed {
  nonce: string;
  senderPublicKey: string;
  box: string;
}

export const seal = (plaintext: string, recipientPublicKey: string): Sealed => {
  const sender = nacl.box.keyPair();
  const nonce = nacl.randomBytes(nacl.box.nonceLength);
  const box = nacl.box(new TextEncoder().encode(plaintext), nonce, bytes(recipientPublicKey), sender.secretKey);
  return { nonce: b64(nonce), senderPublicKey: b64(sender.publicKey), box: b64(box) };
};

/** The plaintext, or undefined when this key cannot open it. */
export const open = (sealed: Sealed, recipientSecretKey: string): string | undefined => {
  const opened = nacl.box.open(bytes(sealed.box), bytes(sealed.nonce), bytes(sealed.senderPublicKey), bytes(recipientSecretKey));
  return opened ? new TextDecoder().decode(opened) : undefined;
};

export const newKeyPair = (): { publicKey: string; secretKey: string } => {
  const pair = nacl.box.keyPair();
  return { publicKey: b64(pair.publicKey), secretKey: b64(pair.secretKey) };
};
