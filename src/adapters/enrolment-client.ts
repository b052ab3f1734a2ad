import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/nats-core';
import { z } from 'zod';
import { enrolmentInbox } from '../domain/bus/users.js';
import { enrolAnswerSchema, enrolToolSubject } from '../domain/nodes/enrol-wire.js';
import { Refusal } from '../domain/refusal.js';
import { UnavailableError, ValidationError } from '../errors.js';
import { enrolmentIdentity, ensureIdentityFile, type Identity } from './identity.js';
import type { BusIdentity } from './nats/connect.js';
import { writePrivateJson } from './key-files.js';
import { newKeyPair } from './sealing.js';

// The agent's half of joining. It makes two key pairs and keeps their secret halves on the
// machine (mode 0600, never sent anywhere): one the mesh seals secrets to, one that is the node's
// identity on the bus. It reaches the bus as the token's identity — the one user a live token
// has — spends the token once, and from then on connects as itself. The answer names the
// controller's public key: kept with the enrolment (0600), it is the key every declaration the
// node applies must be signed with (trust on enrolment, docs/decisions.md).

interface SealingKey {
  publicKey: string;
  secretKey: string;
}

export const nodeIdentity = (stateDir: string): SealingKey => {
  mkdirSync(stateDir, { recursive: true });
  const file = join(stateDir, 'identity.json');
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as SealingKey;
  const identity = newKeyPair();
  writePrivateJson(file, identity);
  return identity;
};

/** The node's identity on the bus: made once, at its first start. */
export const hostKey = (stateDir: string): Identity => ensureIdentityFile<Identity>(join(stateDir, 'host.key')).identity;

const enrolmentRecordSchema = z.strictObject({
  node: z.string(),
  seq: z.number().int(),
  /** the controller's public key, as the enrolment answer named it; absent when the node enrolled before declarations were signed */
  controllerKey: z.string().regex(/^[A-Za-z0-9+/]{43}=$/).optional(),
});
export type EnrolmentRecord = z.infer<typeof enrolmentRecordSchema>;

/** What this machine kept of its enrolment, when it has enrolled. */
export const storedEnrolment = (stateDir: string): EnrolmentRecord | undefined => {
  const file = join(stateDir, 'enrolment.json');
  return existsSync(file) ? enrolmentRecordSchema.parse(JSON.parse(readFileSync(file, 'utf8'))) : undefined;
};

const TOKEN = /^([0-9a-f]{16})\.([A-Za-z0-9_-]+)$/;

/** The bus identity a token stands for, while it lives: its user may ask to enrol and read its own inbox. */
export const tokenBusIdentity = (token: string): BusIdentity => {
  const match = TOKEN.exec(token.trim());
  if (!match) throw new ValidationError('a token is <id>.<secret>, as `mesh node token` printed it', { field: 'token' });
  const [, tokenId = '', secret = ''] = match;
  return { key: enrolmentIdentity(secret), inbox: enrolmentInbox(tokenId) };
};

export const enrol = async (nc: NatsConnection, options: { node: string; token: string; stateDir: string; prefix?: string; timeoutMs?: number }): Promise<EnrolmentRecord> => {
  const sealing = nodeIdentity(options.stateDir);
  const bus = hostKey(options.stateDir);
  let reply;
  try {
    const request = { node: options.node, token: options.token.trim(), publicKey: sealing.publicKey, busKey: bus.publicKey };
    reply = await nc.request(enrolToolSubject(options.prefix), JSON.stringify(request), { timeout: options.timeoutMs ?? 10_000 });
  } catch (cause) {
    throw new UnavailableError(`no controller answered the enrolment of ${options.node}: ${(cause as Error).message}. Is the control plane running?`, { node: options.node }, { cause });
  }
  const answer = enrolAnswerSchema.parse(JSON.parse(reply.string()));
  if (!answer.ok) throw new Refusal(`enrolling node ${options.node}`, answer.refused);
  const record: EnrolmentRecord = { node: answer.node, seq: answer.seq, ...(answer.controllerKey ? { controllerKey: answer.controllerKey } : {}) };
  writePrivateJson(join(options.stateDir, 'enrolment.json'), record);
  return record;
};
