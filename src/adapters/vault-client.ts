import { randomBytes } from 'node:crypto';
import type { NatsConnection } from '@nats-io/nats-core';
import { canonicalJson } from '../domain/canonical.js';
import { Refusal } from '../domain/refusal.js';
import { deliveredSchema, fetchAnswerSchema, keepAnswerSchema, makeAnswerSchema, vaultToolSubject, type FetchRequest, type KeepRequest, type MakeRequest, type Recipient } from '../domain/secrets/vault-wire.js';
import { UnavailableError } from '../errors.js';
import { signBytes, type Identity } from './identity.js';
import { open, sealToSigner } from './sealing.js';

// Both sides of asking the vault (src/vault/vault.ts): the controller has a secret made, a node's
// agent fetches one. Every request is signed and carries a fresh nonce; what comes back is
// checked before it is believed.

const sign = <T>(request: T, key: Pick<Identity, 'secretKey'>) => ({ request, signature: signBytes(key, new TextEncoder().encode(canonicalJson(request))) });

const ask = async (nc: NatsConnection, subject: string, body: unknown, timeoutMs: number, what: Record<string, unknown>): Promise<unknown> => {
  try {
    return JSON.parse((await nc.request(subject, JSON.stringify(body), { timeout: timeoutMs })).string());
  } catch (cause) {
    // The same words however it failed (no responders, a timeout): an agent's hold states its reason once, not per pass.
    throw new UnavailableError('no vault answered', { ...what, detail: (cause as Error).message }, { cause });
  }
};

export interface MakeAsk {
  prefix: string;
  /** the controller's own key: the vault makes secrets only on requests it signed */
  controller: Pick<Identity, 'secretKey'>;
  secret: string;
  purpose: string;
  version: number;
  recipients: Recipient[];
  /** during a rotation, the version readers hold now (kept beside `version`) */
  current?: number;
  now?: Date;
  timeoutMs?: number;
}

/** Whether the vault made a value (false: it held that version already); a Refusal or UnavailableError when not. */
export const makeSecret = async (nc: NatsConnection, ask_: MakeAsk): Promise<{ made: boolean }> => {
  const request: MakeRequest = { secret: ask_.secret, purpose: ask_.purpose, version: ask_.version, recipients: ask_.recipients, ...(ask_.current === undefined ? {} : { current: ask_.current }), at: (ask_.now ?? new Date()).toISOString(), nonce: randomBytes(16).toString('base64') };
  const raw = await ask(nc, vaultToolSubject(ask_.prefix, 'make'), sign(request, ask_.controller), ask_.timeoutMs ?? 5_000, { secret: ask_.secret });
  const answer = makeAnswerSchema.safeParse(raw);
  if (!answer.success) throw new Refusal(`making ${ask_.secret}`, [{ what: 'answer', why: 'not a vault answer', remedy: 'run a vault of the same version as the controller' }]);
  if (!answer.data.ok) throw new Refusal(`making ${ask_.secret}`, answer.data.refused);
  return { made: answer.data.made };
};

export interface FetchAsk {
  prefix: string;
  node: string;
  secret: string;
  /** the version a declaration placed; the vault's current when absent */
  version?: number;
  /** the node's host key: the vault knows the node by it */
  hostKey: Pick<Identity, 'secretKey'>;
  /** the node's tweetnacl box secret key (enrolment-client.ts nodeIdentity) */
  sealingSecretKey: string;
  now?: Date;
  timeoutMs?: number;
}

/** The secret's value and version, opened; a Refusal (the vault said no, or the answer does not add up) or an UnavailableError (nobody answered). */
export const fetchSecret = async (nc: NatsConnection, ask_: FetchAsk): Promise<{ version: number; value: string }> => {
  const request: FetchRequest = { secret: ask_.secret, node: ask_.node, ...(ask_.version === undefined ? {} : { version: ask_.version }), at: (ask_.now ?? new Date()).toISOString(), nonce: randomBytes(16).toString('base64') };
  const raw = await ask(nc, vaultToolSubject(ask_.prefix, 'fetch'), sign(request, ask_.hostKey), ask_.timeoutMs ?? 5_000, { secret: ask_.secret, node: ask_.node });
  const subject = `fetching ${ask_.secret} for ${ask_.node}`;
  const answer = fetchAnswerSchema.safeParse(raw);
  if (!answer.success) throw new Refusal(subject, [{ what: 'answer', why: 'not a vault answer', remedy: 'run a vault of the same version as the agent' }]);
  if (!answer.data.ok) throw new Refusal(subject, answer.data.refused);
  const opened = open(answer.data.sealed, ask_.sealingSecretKey);
  if (opened === undefined) throw new Refusal(subject, [{ what: 'answer', why: "it is not sealed to this node's key", remedy: 'check that this agent runs with the state folder it enrolled with' }]);
  const delivered = deliveredSchema.safeParse(JSON.parse(opened));
  if (!delivered.success) throw new Refusal(subject, [{ what: 'answer', why: 'the sealed value is not a delivery', remedy: 'run a vault of the same version as the agent' }]);
  const { secret, node, nonce, version, value } = delivered.data;
  if (secret !== ask_.secret || node !== ask_.node || nonce !== request.nonce || (ask_.version !== undefined && version !== ask_.version)) throw new Refusal(subject, [{ what: 'answer', why: `it answers another request (${secret} for ${node})`, remedy: 'ask again' }]);
  return { version, value };
};

export interface KeepAsk {
  prefix: string;
  /** the controller's own key: the vault keeps what it alone signed */
  controller: Pick<Identity, 'secretKey'>;
  secret: string;
  purpose: string;
  version: number;
  value: string;
  /** the bus key (ed25519 public) of the holder of mesh-vault: the value is sealed to it alone */
  vaultKey: string;
  now?: Date;
  timeoutMs?: number;
}

/** Hands one of the mesh's own secrets to the vault: whether it kept it now (false: it held it already); a Refusal or UnavailableError when not. */
export const keepSecret = async (nc: NatsConnection, ask_: KeepAsk): Promise<{ kept: boolean }> => {
  const request: KeepRequest = { secret: ask_.secret, purpose: ask_.purpose, version: ask_.version, sealed: sealToSigner(ask_.value, ask_.vaultKey), at: (ask_.now ?? new Date()).toISOString(), nonce: randomBytes(16).toString('base64') };
  const raw = await ask(nc, vaultToolSubject(ask_.prefix, 'keep'), sign(request, ask_.controller), ask_.timeoutMs ?? 5_000, { secret: ask_.secret });
  const answer = keepAnswerSchema.safeParse(raw);
  if (!answer.success) throw new Refusal(`handing ${ask_.secret} to the vault`, [{ what: 'answer', why: 'not a vault answer', remedy: 'run a vault of the same version as the controller' }]);
  if (!answer.data.ok) throw new Refusal(`handing ${ask_.secret} to the vault`, answer.data.refused);
  return { kept: answer.data.kept };
};
