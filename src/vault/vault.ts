import type { NatsConnection, Subscription } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import { answerToInbox, isInboxReply } from '../adapters/nats/answer.js';
import type { z } from 'zod';
import { verifyBytes } from '../adapters/identity.js';
import type { Identity } from '../adapters/identity.js';
import { openAsSigner, seal } from '../adapters/sealing.js';
import { canonicalJson } from '../domain/canonical.js';
import type { Problem } from '../domain/refusal.js';
import { MESH_SECRET_PREFIX } from '../domain/secrets/genesis.js';
import {
  fetchRequestSchema,
  keepRequestSchema,
  makeRequestSchema,
  REQUEST_TTL_MS,
  signedSchema,
  vaultToolSubject,
  type Delivered,
  type FetchAnswer,
  type KeepAnswer,
  type MakeAnswer,
} from '../domain/secrets/vault-wire.js';
import type { VaultStore } from './store.js';
import { describeSpeaker, refuseImpersonation, speakerOfReply } from '../controller/speaker.js';

// The holder of mesh-vault: the one maker of the mesh's shared secrets (ADR 0113). It serves two
// tools on core request/reply. `make`, asked by the controller (its request signed with the key
// the log's commits are signed with), makes a secret's version if it holds none and names who may
// have it. `fetch`, asked by a node's agent (signed with the node's host key), answers only a node
// the secret names, sealed to that node's box key. A request older than two minutes, or one seen
// before, is refused, so a copied request is worth nothing — and its answer, sealed to the node
// and bound to its nonce, would be worth nothing either. `keep`, asked by the controller, hands it
// one of the mesh's own secrets genesis made, sealed to this vault's own key: it keeps it like its
// own and never replaces a version it holds.
//
// Who asks `fetch`: the node whose host key signed it (every host may publish on the subject:
// users.ts). The answer goes to the reply's inbox, which only its identity reads; a request whose
// answer would go to another host's inbox than the node it names is refused with a finding
// (speaker.ts), whatever its signature: host beta relaying alpha's signed request gets nothing.

export const VAULT_QUEUE = 'mesh-vault';

export interface VaultOptions {
  prefix: string;
  /** the controller's public key (base64 ed25519): only requests it signed may make secrets */
  controllerKey: string;
  store: VaultStore;
  /** its own key (its module's bus identity): what the mesh's own secrets are sealed to when handed to it */
  identity?: Pick<Identity, 'secretKey'>;
  logger: Logger;
  now?: () => Date;
}

type Outcome<T> = { ok: true; request: T; signature: string } | { ok: false; refused: Problem[] };

export class Vault {
  private readonly subscriptions: Subscription[] = [];
  /** signer and nonce of every request answered within the last REQUEST_TTL_MS, with when it may be forgotten */
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly nc: NatsConnection,
    private readonly options: VaultOptions,
  ) {}

  start(): void {
    for (const [tool, answer] of [
      ['make', (payload: Uint8Array) => this.make(payload)],
      ['fetch', (payload: Uint8Array, reply?: string) => this.fetch(payload, reply)],
      ['keep', (payload: Uint8Array) => this.keep(payload)],
    ] as const) {
      this.subscriptions.push(
        this.nc.subscribe(vaultToolSubject(this.options.prefix, tool), {
          queue: VAULT_QUEUE,
          callback: (error, message) => {
            // answered on an inbox or not at all (answer.ts): a module may answer any reply subject once
            if (!error && isInboxReply(message.reply)) answerToInbox(message, JSON.stringify(answer(message.data, message.reply)));
          },
        }),
      );
    }
  }

  stop(): void {
    for (const subscription of this.subscriptions.splice(0)) subscription.unsubscribe();
  }

  private make(payload: Uint8Array): MakeAnswer {
    const read = this.read(payload, makeRequestSchema, 'make', () => this.options.controllerKey, 'the controller');
    if (!read.ok) return read;
    const { request } = read;
    const made = this.options.store.ensure(request.secret, request.purpose, request.version, request.recipients, request.current);
    this.options.logger.info({ secret: request.secret, version: request.version, recipients: request.recipients.map((r) => r.node), made }, made ? 'secret made' : 'secret recipients named');
    return { ok: true, secret: request.secret, version: request.version, made };
  }

  private keep(payload: Uint8Array): KeepAnswer {
    const read = this.read(payload, keepRequestSchema, 'keep', () => this.options.controllerKey, 'the controller');
    if (!read.ok) return this.refused(read.refused, 'secret not kept');
    const { request } = read;
    const what = `${request.secret} version ${request.version}`;
    if (!request.secret.startsWith(MESH_SECRET_PREFIX)) {
      return this.refused([{ what, why: `the vault keeps only the mesh's own secrets as they are handed to it (named ${MESH_SECRET_PREFIX}…); every other it makes itself`, remedy: 'have the vault make it: a make request' }], 'secret not kept');
    }
    const value = this.options.identity ? openAsSigner(request.sealed, this.options.identity.secretKey) : undefined;
    if (value === undefined) {
      const why = this.options.identity ? "it is not sealed to this vault's key: it was meant for another holder of mesh-vault" : 'this vault runs without its own key (MESH_BUS_KEY), so nothing sealed to it opens';
      return this.refused([{ what, why, remedy: 'hand it to the holder of mesh-vault the log names, sealed to its bus identity' }], 'secret not kept');
    }
    const outcome = this.options.store.keep(request.secret, request.purpose, request.version, value);
    if (outcome === 'differs') {
      return this.refused([{ what, why: `the vault holds version ${request.version} of ${request.secret} with another value, and never replaces one it holds`, remedy: 'a new value is a new version' }], 'secret not kept');
    }
    this.options.logger.info({ secret: request.secret, version: request.version, kept: outcome === 'kept' }, outcome === 'kept' ? "the mesh's own secret kept" : "the mesh's own secret held already");
    return { ok: true, secret: request.secret, version: request.version, kept: outcome === 'kept' };
  }

  private refused(refused: Problem[], message: string): { ok: false; refused: Problem[] } {
    this.options.logger.warn({ refused }, message);
    return { ok: false, refused };
  }

  private fetch(payload: Uint8Array, reply: string | undefined): FetchAnswer {
    const impersonation = this.impersonation(payload, reply);
    if (impersonation) return { ok: false, refused: [impersonation] };
    const read = this.read(payload, fetchRequestSchema, 'fetch', (request) => {
      const entry = this.options.store.get(request.secret);
      if (!entry) return { what: request.secret, why: 'the vault holds no such secret', remedy: 'wait until the controller has had it made; mesh log --type secret.made shows when' };
      const recipient = entry.recipients.find((r) => r.node === request.node);
      if (!recipient) return { what: `${request.secret} for ${request.node}`, why: `node ${request.node} is not a recipient of ${request.secret} (it goes to ${entry.recipients.map((r) => r.node).join(', ') || 'nobody'})`, remedy: 'a secret goes to the nodes its requirement names: assign the module that needs it there' };
      return recipient.signingKey;
    }, 'the node it names');
    if (!read.ok) {
      this.options.logger.warn({ refused: read.refused }, 'secret not handed out');
      return read;
    }
    const { request } = read;
    const entry = this.options.store.get(request.secret)!;
    const recipient = entry.recipients.find((r) => r.node === request.node)!;
    const held = this.options.store.value(entry, request.version);
    if (!held) {
      const refused = [{ what: `${request.secret} version ${request.version ?? 'current'}`, why: `the vault holds versions ${entry.versions.map((v) => v.version).join(', ')} of ${request.secret}, not that one`, remedy: 'wait until the controller has had it made (mesh secret status)' }];
      this.options.logger.warn({ refused }, 'secret not handed out');
      return { ok: false, refused };
    }
    const { version, value } = held;
    const delivered: Delivered = { secret: request.secret, node: request.node, version, nonce: request.nonce, value };
    this.options.logger.info({ secret: request.secret, node: request.node, version }, 'secret handed out, sealed to its node');
    return { ok: true, secret: request.secret, node: request.node, sealed: seal(JSON.stringify(delivered), recipient.sealingKey) };
  }

  /** A fetch naming another node than the host whose inbox its answer would reach: the finding's problem. */
  private impersonation(payload: Uint8Array, reply: string | undefined): Problem | undefined {
    const speaker = speakerOfReply(reply);
    if (speaker?.kind !== 'host') return undefined;
    let named: string | undefined;
    try {
      const parsed = signedSchema(fetchRequestSchema).safeParse(JSON.parse(new TextDecoder().decode(payload)));
      named = parsed.success ? parsed.data.request.node : undefined;
    } catch {
      return undefined; // not JSON: `read` says so
    }
    if (named === undefined || named === speaker.node) return undefined;
    return refuseImpersonation({ logger: this.options.logger }, { entry: 'vault-fetch', identity: describeSpeaker(speaker), claimed: `node ${named}`, field: 'request.node' });
  }

  /**
   * A signed request read, checked against the key `keyOf` names for it, fresh and not seen
   * before; or why not. `keyOf` may instead say why nobody's key applies.
   */
  private read<R extends { at: string; nonce: string }>(payload: Uint8Array, schema: z.ZodType<R>, tool: string, keyOf: (request: R) => string | Problem, signer: string): Outcome<R> {
    let parsed;
    try {
      parsed = signedSchema(schema).safeParse(JSON.parse(new TextDecoder().decode(payload)));
    } catch (error) {
      return { ok: false, refused: [{ what: 'request', why: `not JSON: ${(error as Error).message}`, remedy: `send a signed ${tool} request` }] };
    }
    if (!parsed.success) return { ok: false, refused: [{ what: 'request', why: `not a signed ${tool} request: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`, remedy: 'run an agent and controller of the same version as the vault' }] };
    const { request, signature } = parsed.data;
    const key = keyOf(request);
    if (typeof key !== 'string') return { ok: false, refused: [key] };
    const problems: Problem[] = [];
    if (!verifyBytes(key, new TextEncoder().encode(canonicalJson(request)), signature)) {
      problems.push({ what: 'signature', why: `the ${tool} request is not signed by ${signer}`, remedy: `sign it with the key of ${signer}` });
    }
    const now = (this.options.now ?? (() => new Date()))().getTime();
    const age = now - Date.parse(request.at);
    if (Math.abs(age) > REQUEST_TTL_MS) problems.push({ what: 'at', why: `the request was made at ${request.at}, more than ${REQUEST_TTL_MS / 1000}s from the vault's clock`, remedy: 'ask again now; check the clocks of both machines' });
    for (const [seen, until] of this.seen) if (until < now) this.seen.delete(seen);
    const id = `${key}:${request.nonce}`;
    if (this.seen.has(id)) problems.push({ what: 'nonce', why: 'this request was answered before: a request is answered once', remedy: 'ask again with a new request' });
    if (problems.length > 0) return { ok: false, refused: problems };
    this.seen.set(id, now + 2 * REQUEST_TTL_MS);
    return { ok: true, request, signature };
  }
}
