import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { consoleSessionBytes } from '../domain/operators/console-session.js';
import { signedBytes, type SignedCommand, type SignedFor } from '../domain/operators/signed-command.js';
import { UnavailableError } from '../errors.js';
import { newIdentity, signBytes, verifyBytes } from './identity.js';
import { writePrivateJson } from './key-files.js';

// An operator's signing key lives in a file only its owner can read; the mesh knows the public half.

export interface OperatorKey {
  operator: string;
  publicKey: string;
  secretKey: string;
}

export const createOperatorKey = (file: string, operator: string): OperatorKey => {
  if (existsSync(file)) throw new UnavailableError(`an operator key already exists at ${file}; it is never overwritten`, { file });
  const key = { operator, ...newIdentity() };
  // The file is what is private (0600); a mode on `recursive` would close every folder it creates,
  // and a database server beside it must still reach its own data through them.
  mkdirSync(dirname(file), { recursive: true });
  writePrivateJson(file, key);
  return key;
};

export const loadOperatorKey = (file: string): OperatorKey => {
  if (!existsSync(file)) {
    throw new UnavailableError(`no operator key at ${file}: commands are signed by an operator; run \`npx mesh dev up\` (which makes the first one) or set MESH_OPERATOR_KEY`, { file });
  }
  return JSON.parse(readFileSync(file, 'utf8')) as OperatorKey;
};

// Signed and checked with Node's own ed25519 (the same signatures tweetnacl made: ed25519 is
// deterministic), a few hundred times faster than tweetnacl's pure JavaScript on every command.
// `purpose` is signed with the rest: a plan's signature is never a command's (signed-command.ts).
export const signCommand = (key: OperatorKey, commandId: string, command: Record<string, unknown>, time: Date, purpose: SignedFor = 'carry-out'): SignedCommand => {
  const unsigned = { commandId, operator: key.operator, command, time: time.toISOString(), purpose };
  return { ...unsigned, signature: signBytes({ secretKey: key.secretKey }, signedBytes(unsigned)) };
};

export const verifySignature = (signed: SignedCommand, publicKey: string): boolean => verifyBytes(publicKey, signedBytes(signed), signed.signature);

/** The signature that opens a console session (docs/decisions.md, "Reading needs a reason"): over the nonce, in the session's own context. */
export const signConsoleNonce = (key: OperatorKey, nonce: string): string => signBytes({ secretKey: key.secretKey }, consoleSessionBytes({ operator: key.operator, nonce }));
