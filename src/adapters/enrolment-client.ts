import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/nats-core';
import { busCredentialsSchema, enrolAnswerSchema, enrolToolSubject, type BusCredentials } from '../domain/nodes/enrol-wire.js';
import { Refusal } from '../domain/refusal.js';
import { UnavailableError } from '../errors.js';
import { writePrivateJson } from './key-files.js';
import { newKeyPair, open } from './sealing.js';

// The agent's half of joining: it makes its own key pair and keeps the secret half on the machine
// (mode 0600, never sent anywhere), spends its token once, and opens the credentials sealed to it.

interface Identity {
  publicKey: string;
  secretKey: string;
}

export const nodeIdentity = (stateDir: string): Identity => {
  mkdirSync(stateDir, { recursive: true });
  const file = join(stateDir, 'identity.json');
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as Identity;
  const identity = newKeyPair();
  writePrivateJson(file, identity);
  return identity;
};

export const storedCredentials = (stateDir: string): BusCredentials | undefined => {
  const file = join(stateDir, 'credentials.json');
  return existsSync(file) ? busCredentialsSchema.parse(JSON.parse(readFileSync(file, 'utf8'))) : undefined;
};

export const enrol = async (nc: NatsConnection, options: { node: string; token: string; stateDir: string; prefix?: string; timeoutMs?: number }): Promise<BusCredentials> => {
  const identity = nodeIdentity(options.stateDir);
  let reply;
  try {
    reply = await nc.request(enrolToolSubject(options.prefix), JSON.stringify({ node: options.node, token: options.token, publicKey: identity.publicKey }), { timeout: options.timeoutMs ?? 10_000 });
  } catch (cause) {
    throw new UnavailableError(`no controller answered the enrolment of ${options.node}: ${(cause as Error).message}. Is the control plane running?`, { node: options.node }, { cause });
  }
  const answer = enrolAnswerSchema.parse(JSON.parse(reply.string()));
  if (!answer.ok) throw new Refusal(`enrolling node ${options.node}`, answer.refused);
  const plaintext = open(answer.credentials, identity.secretKey);
  if (plaintext === undefined) throw new UnavailableError(`the enrolment answer for ${options.node} was not sealed to this machine's key`, { node: options.node });
  const credentials = busCredentialsSchema.parse(JSON.parse(plaintext));
  writePrivateJson(join(options.stateDir, 'credentials.json'), credentials);
  return credentials;
};
