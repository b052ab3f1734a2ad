import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import nacl from 'tweetnacl';
import { signedBytes, type SignedCommand } from '../domain/operators/signed-command.js';
import { UnavailableError } from '../errors.js';

// An operator's signing key lives in a file only its owner can read; the mesh knows the public half.

export interface OperatorKey {
  operator: string;
  publicKey: string;
  secretKey: string;
}

const b64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64');
const bytes = (text: string): Uint8Array => new Uint8Array(Buffer.from(text, 'base64'));

export const createOperatorKey = (file: string, operator: string): OperatorKey => {
  if (existsSync(file)) throw new UnavailableError(`an operator key already exists at ${file}; it is never overwritten`, { file });
  const pair = nacl.sign.keyPair();
  const key = { operator, publicKey: b64(pair.publicKey), secretKey: b64(pair.secretKey) };
  // The file is what is private (0600); a mode on `recursive` would close every folder it creates,
  // and a database server beside it must still reach its own data through them.
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(key)}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return key;
};

export const loadOperatorKey = (file: string): OperatorKey => {
  if (!existsSync(file)) {
    throw new UnavailableError(`no operator key at ${file}: commands are signed by an operator; run \`npx mesh dev up\` (which makes the first one) or set MESH_OPERATOR_KEY`, { file });
  }
  return JSON.parse(readFileSync(file, 'utf8')) as OperatorKey;
};

export const signCommand = (key: OperatorKey, commandId: string, command: Record<string, unknown>, time: Date): SignedCommand => {
  const unsigned = { commandId, operator: key.operator, command, time: time.toISOString() };
  return { ...unsigned, signature: b64(nacl.sign.detached(signedBytes(unsigned), bytes(key.secretKey))) };
};

export const verifySignature = (signed: SignedCommand, publicKey: string): boolean => {
  try {
    return nacl.sign.detached.verify(signedBytes(signed), bytes(signed.signature), bytes(publicKey));
  } catch {
    return false;
  }
};
