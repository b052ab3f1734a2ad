import { createHash, createHmac, createPrivateKey, createPublicKey, randomBytes, sign as edSign, verify as edVerify, type KeyObject } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Authenticator } from '@nats-io/nats-core';
import { Prefix } from '@nats-io/nkeys';
import { Codec } from '@nats-io/nkeys/lib/codec.js';
import { UnavailableError } from '../errors.js';
import { fromBase64, toBase64, writePrivateJson } from './key-files.js';

// Every process of the mesh has an ed25519 key of its own: operators, the controller, each node's
// host, each enrolment token. The public half is what the mesh knows (in the log, or in the
// controller's configuration); the secret half stays in a 0600 file on the machine that made it.
//
// The same key is the process's identity on the bus: NATS nkeys are ed25519 keys, so a user in the
// server's list is the public half (`U…`), and the server checks a signature over its nonce at
// connect. No password is ever made, stored, hashed or sent (docs/decisions.md, "Bus identities").

/** DER prefixes of an ed25519 key: the seed or public key follows. */
const PKCS8_ED25519 = Buffer.from('302e020100300506032b657004220420', 'hex');
const SPKI_ED25519 = Buffer.from('302a300506032b6570032100', 'hex');

export interface KeyPairFile {
  publicKey: string;
  secretKey: string;
}

export interface Identity {
  /** base64 of the 32-byte ed25519 public key */
  publicKey: string;
  /** base64 of the 64-byte secret key: its seed, then its public key (the layout tweetnacl keeps) */
  secretKey: string;
}

export const newIdentity = (): Identity => identityFromSeed(randomBytes(32));

/**
 * An identity from 32 bytes of seed: the same seed always gives the same key. Made with Node's
 * ed25519, in the file format the mesh has always kept (tweetnacl's: seed, then public key).
 */
export const identityFromSeed = (seed: Uint8Array): Identity => {
  if (seed.length !== 32) throw new UnavailableError('an ed25519 seed is 32 bytes', { length: seed.length });
  const secret = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519, seed]), format: 'der', type: 'pkcs8' });
  const publicKey = createPublicKey(secret).export({ format: 'der', type: 'spki' }).subarray(SPKI_ED25519.length);
  return { publicKey: toBase64(publicKey), secretKey: toBase64(Buffer.concat([seed, publicKey])) };
};

/** Loads the key file, or makes it (0600) when there is none; a file is never overwritten. */
export const ensureIdentityFile = <T extends KeyPairFile>(file: string, extra: Omit<T, keyof KeyPairFile> = {} as Omit<T, keyof KeyPairFile>): { identity: T; created: boolean } => {
  if (existsSync(file)) return { identity: loadIdentityFile<T>(file), created: false };
  mkdirSync(dirname(file), { recursive: true });
  const identity = { ...extra, ...newIdentity() } as T;
  writePrivateJson(file, identity);
  return { identity, created: true };
};

export const loadIdentityFile = <T extends KeyPairFile = Identity>(file: string, hint = ''): T => {
  if (!existsSync(file)) throw new UnavailableError(`no key at ${file}${hint ? `: ${hint}` : ''}`, { file });
  const parsed = JSON.parse(readFileSync(file, 'utf8')) as T;
  if (typeof parsed.publicKey !== 'string' || typeof parsed.secretKey !== 'string' || fromBase64(parsed.secretKey).length !== 64) {
    throw new UnavailableError(`${file} is not a key file (it needs publicKey and a 64-byte secretKey, base64)`, { file });
  }
  return parsed;
};

const seedOf = (identity: Pick<Identity, 'secretKey'>): Uint8Array => fromBase64(identity.secretKey).subarray(0, 32);

/** The nkey (`U…`) a NATS server knows this public key by. */
export const nkeyOf = (publicKey: string): string => {
  const raw = fromBase64(publicKey);
  if (raw.length !== 32) throw new UnavailableError('an ed25519 public key is 32 bytes', { length: raw.length });
  return new TextDecoder().decode(Codec.encode(Prefix.User, raw));
};

/**
 * How a connection proves it holds the identity: the server's nonce signed with its key. The nkey
 * is derived from the seed once, and the nonce signed with Node's ed25519 (signBytes): the
 * client's own authenticator derives the public key again in tweetnacl at every handshake, tens
 * of milliseconds of one core each on a busy machine, for every connection and every reconnect.
 */
export const busAuthenticator = (identity: Pick<Identity, 'secretKey'>): Authenticator => {
  const nkey = nkeyOf(identityFromSeed(seedOf(identity)).publicKey);
  return (nonce?: string) => ({ nkey, sig: nonce ? signBytes(identity, new TextEncoder().encode(nonce)) : '' });
};

// Signatures through node:crypto's native ed25519: about a hundred times faster than tweetnacl's,
// which matters when every reader checks every commit.
const publicKeys = new Map<string, KeyObject>();
const privateKeys = new Map<string, KeyObject>();

const privateKeyOf = (identity: Pick<Identity, 'secretKey'>): KeyObject => {
  let key = privateKeys.get(identity.secretKey);
  if (!key) {
    key = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519, seedOf(identity)]), format: 'der', type: 'pkcs8' });
    privateKeys.set(identity.secretKey, key);
  }
  return key;
};

const publicKeyOf = (publicKey: string): KeyObject => {
  let key = publicKeys.get(publicKey);
  if (!key) {
    key = createPublicKey({ key: Buffer.concat([SPKI_ED25519, fromBase64(publicKey)]), format: 'der', type: 'spki' });
    publicKeys.set(publicKey, key);
  }
  return key;
};

/** base64 ed25519 signature over `bytes` */
export const signBytes = (identity: Pick<Identity, 'secretKey'>, bytes: Uint8Array): string => toBase64(edSign(null, bytes, privateKeyOf(identity)));

export const verifyBytes = (publicKey: string, bytes: Uint8Array, signature: string): boolean => {
  try {
    return edVerify(null, bytes, publicKeyOf(publicKey), fromBase64(signature));
  } catch {
    return false;
  }
};

/** The identity an enrolment token's secret stands for: whoever holds the token can reach the bus as it, once. */
export const enrolmentIdentity = (secret: string): Identity =>
  identityFromSeed(new Uint8Array(createHash('sha256').update(`mesh-enrolment-token:${secret}`).digest()));

/**
 * The bus identity of a module assigned to a node: derived from the controller's key, so the
 * control plane composes it without storing anything, and a controller with another key derives
 * other users. The seed reaches the node sealed to the host's key, never through a stream.
 */
export const moduleBusIdentity = (controller: Pick<Identity, 'secretKey'>, node: string, module: string): Identity =>
  identityFromSeed(new Uint8Array(createHmac('sha256', seedOf(controller)).update(`mesh-bus-user:${node}/${module}`).digest()));

/**
 * The bus identity the controller writes the snapshots of its fold as: derived from the
 * controller's key like a module's, and allowed that one bucket alone — replacing a snapshot purges
 * the old one's chunks, and the controller's own user may purge no stream.
 */
export const foldSnapshotWriterIdentity = (controller: Pick<Identity, 'secretKey'>): Identity =>
  identityFromSeed(new Uint8Array(createHmac('sha256', seedOf(controller)).update('mesh-fold-snapshot-writer').digest()));
