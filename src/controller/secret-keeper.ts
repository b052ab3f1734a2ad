import type { NatsConnection } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import { moduleBusIdentity, type Identity } from '../adapters/identity.js';
import { keepSecret, makeSecret } from '../adapters/vault-client.js';
import { sha256Digest } from '../domain/canonical.js';
import type { MeshState } from '../domain/mesh/state.js';
import { nodeNamed } from '../domain/nodes/state.js';
import { Refusal } from '../domain/refusal.js';
import { decideRecordSecret } from '../domain/secrets/decider.js';
import type { RotationParty } from '../domain/secrets/events.js';
import { awaitingHandOver, decideHandedOver } from '../domain/secrets/genesis.js';
import { decideRotationMade, decideRotationPartiesGone, decideRotationRetired } from '../domain/secrets/rotation.js';
import { allSecrets, rotationStep, secretNamed, type Rotation } from '../domain/secrets/state.js';
import type { Recipient } from '../domain/secrets/vault-wire.js';
import { wantedSecrets, type WantedSecret } from '../domain/secrets/wanted.js';
import { UnavailableError } from '../errors.js';
import { CONTROLLER_RECIPIENT, openGenesisSecret } from './genesis-secrets.js';
import type { MeshService } from './mesh-service.js';

// The controller's side of the vault: every secret the assignments name is had made by the vault
// (the one maker of the mesh's secrets, ADR 0113) and told who may fetch it — each recipient node
// by the keys it enrolled with — and only once the vault has answered does the log record it
// (`secret.made`, `secret.shared`: name, purpose, recipients, version; never a value). A vault
// that does not answer is asked again, backing off, and nothing is recorded meanwhile: the agents
// hold the secret's resource, saying it waits for the vault. The mesh's own secrets, made at
// genesis, it hands to the holder of mesh-vault from its copy in the genesis file, sealed to that
// holder's key, and records `secret.handed-over` once the vault kept them. Runs on the writer.

export interface SecretKeeperView {
  mesh(): MeshState;
  isCaughtUp(): boolean;
  onChange(listener: (change: unknown, caughtUp: boolean) => void): void;
}

export interface SecretKeeperOptions {
  prefix: string;
  /** signs what the vault is asked to make: the key the log's commits are signed with; opens the controller's copy of the mesh's own secrets */
  controller: Pick<Identity, 'secretKey' | 'publicKey'>;
  /** the genesis secrets file (MESH_GENESIS_SECRETS): the mesh's own secrets, sealed to the controller's key among others */
  genesisSecretsFile?: string;
  actor: string;
  logger: Logger;
  retryMs?: { first: number; most: number };
  /**
   * How long after one pass a change may start the next (default 100 ms). A pass looks at every
   * secret the assignments want, so on a busy log passes are spaced rather than run per commit.
   */
  passEveryMs?: number;
}

export class SecretKeeper {
  /** what the vault last confirmed for each secret (version and recipients with their keys): asked again only when it changes */
  private readonly told = new Map<string, string>();
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private retry: NodeJS.Timeout | undefined;
  private backoff: number;
  /** when the last pass started (performance.now()), and the timer of a pass put off until the spacing allows it */
  private passStartedAt = -Infinity;
  private spaced: NodeJS.Timeout | undefined;
  /** the mesh's own secrets this controller has no copy of to open: said once */
  private readonly unopened = new Set<string>();

  constructor(
    private readonly nc: NatsConnection,
    private readonly view: SecretKeeperView,
    private readonly mesh: MeshService,
    private readonly options: SecretKeeperOptions,
  ) {
    this.backoff = options.retryMs?.first ?? 1_000;
  }

  start(): void {
    this.view.onChange((_change, caughtUp) => {
      // While the vault is not answering, a change waits for the retry rather than asking it at
      // once: a busy mesh would otherwise ask a silent vault on every commit.
      if (caughtUp && this.retry === undefined) this.scheduleSpaced();
    });
    if (this.view.isCaughtUp()) this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    clearTimeout(this.spaced);
    await this.running?.catch(() => undefined);
  }

  /** A pass for a change: now, or once the spacing since the last one allows. */
  private scheduleSpaced(): void {
    if (this.spaced !== undefined) return;
    const wait = this.passStartedAt + (this.options.passEveryMs ?? 100) - performance.now();
    if (wait <= 0) return this.schedule();
    this.spaced = setTimeout(() => {
      this.spaced = undefined;
      this.schedule();
    }, wait);
  }

  private schedule(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.passStartedAt = performance.now();
    this.running = this.pass()
      .catch((error: unknown) => this.options.logger.error({ err: error }, 'secrets not kept this pass'))
      .finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.schedule();
        }
      });
  }

  /** One pass: every wanted secret whose version or recipients the vault has not confirmed, asked for. */
  private async pass(): Promise<void> {
    const state = this.view.mesh();
    let unanswered = 0;
    const wantedNow = wantedSecrets(state);
    this.options.logger.debug({ seq: state.seq, wanted: wantedNow.size }, 'secrets pass');
    for (const wanted of wantedNow.values()) {
      if (this.stopped) return;
      const version = secretNamed(state.secrets, wanted.secret)?.version ?? 1;
      const recipients = recipientsOf(state, wanted);
      const digest = sha256Digest({ version, recipients, purpose: wanted.purpose });
      if (this.told.get(wanted.secret) === digest) continue;
      try {
        const { made } = await makeSecret(this.nc, { prefix: this.options.prefix, controller: this.options.controller, secret: wanted.secret, purpose: wanted.purpose, version, recipients });
        const command = { secret: wanted.secret, purpose: wanted.purpose, recipients: wanted.recipients, version };
        const decision = decideRecordSecret(command, state);
        if (decision.events.length > 0) {
          await this.mesh.appendDecided({
            subject: `recording secret ${wanted.secret}`,
            decide: (now) => decideRecordSecret(command, now),
            metadata: { commandId: `secret:${wanted.secret}:${version}:${digest.slice(7, 23)}`, actor: this.options.actor },
          });
        }
        this.told.set(wanted.secret, digest);
        this.options.logger.info({ secret: wanted.secret, version, recipients: wanted.recipients, made }, made ? 'the vault made a secret' : 'the vault holds the secret for its recipients');
      } catch (error) {
        unanswered++;
        if (error instanceof Refusal) this.options.logger.error({ secret: wanted.secret, refused: error.problems }, 'the vault refused to make a secret');
        else this.options.logger.warn({ secret: wanted.secret, err: error }, 'the vault did not answer; asking again later');
      }
    }
    for (const secret of allSecrets(state.secrets)) {
      if (this.stopped) return;
      if (secret.rotation && !(await this.rotate(state, secret.secret, secret.rotation))) unanswered++;
    }
    for (const awaiting of awaitingHandOver(state)) {
      if (this.stopped) return;
      const outcome = await this.handOver(awaiting);
      if (outcome === 'unanswered') {
        // Nobody answers for the vault: the others would wait as long. Asked again below.
        unanswered++;
        break;
      }
      if (outcome === 'refused') unanswered++;
    }
    if (unanswered > 0 && !this.stopped) {
      clearTimeout(this.retry);
      this.retry = setTimeout(() => {
        this.retry = undefined;
        this.schedule();
      }, this.backoff);
      // At most 5 s: a vault that has just started is found within seconds, and every module
      // waiting on a secret holds until it is (asking costs one request per secret).
      this.backoff = Math.min(this.backoff * 2, this.options.retryMs?.most ?? 5_000);
    } else this.backoff = this.options.retryMs?.first ?? 1_000;
  }

  /**
   * One of the mesh's own secrets handed to the holder of mesh-vault (docs/decisions.md, "The mesh's
   * own first secrets"): opened from the controller's copy in the genesis file, sealed to the
   * holder's bus key — which the controller derives, and which only that module's node is given —
   * and recorded once the vault said it keeps it. The vault's `keep` is idempotent, so a controller
   * restarted between the two hands it over again and records it then.
   */
  private async handOver(awaiting: { secret: string; purpose: string; version: number; vault: RotationParty }): Promise<'done' | 'refused' | 'unanswered' | 'not-here'> {
    const { secret, purpose, version, vault } = awaiting;
    const file = this.options.genesisSecretsFile;
    let value: string;
    try {
      if (!file) throw new UnavailableError('this controller was started without the genesis secrets file (MESH_GENESIS_SECRETS)', {});
      value = openGenesisSecret(file, secret, CONTROLLER_RECIPIENT, this.options.controller).value;
    } catch (error) {
      // Nothing to retry until the controller is started with the file: said once per secret and start.
      if (!this.unopened.has(secret)) this.options.logger.error({ secret, err: error }, "the mesh's own secret cannot be handed to the vault: the controller cannot open its copy");
      this.unopened.add(secret);
      return 'not-here';
    }
    try {
      const { kept } = await keepSecret(this.nc, { prefix: this.options.prefix, controller: this.options.controller, secret, purpose, version, value, vaultKey: moduleBusIdentity(this.options.controller, vault.node, vault.module).publicKey });
      await this.mesh.appendDecided({
        subject: `recording ${secret} handed to the vault`,
        decide: (now) => decideHandedOver(now, secret, version, vault),
        metadata: { commandId: `handover:${secret}:${version}:${vault.node}/${vault.module}`, actor: this.options.actor },
      });
      this.options.logger.info({ secret, version, vault, kept }, kept ? "the vault keeps the mesh's own secret" : "the vault held the mesh's own secret already");
      return 'done';
    } catch (error) {
      if (error instanceof Refusal) {
        this.options.logger.error({ secret, vault, refused: error.problems }, "the vault refused the mesh's own secret");
        return 'refused';
      }
      this.options.logger.warn({ secret, vault, err: error }, "the vault did not answer; handing the mesh's own secrets over later");
      return 'unanswered';
    }
  }

  /** A rotation a party of which is no longer assigned: given up, naming it, once. False when the log could not be written. */
  private async giveUp(name: string, rotation: Rotation): Promise<boolean> {
    try {
      await this.mesh.appendDecided({
        subject: `giving up the rotation of secret ${name}`,
        decide: (now) => decideRotationPartiesGone(now, name, rotation.version),
        metadata: { commandId: `rotation:${name}:${rotation.version}:parties-gone:${rotation.abandoned ? 'unwinding' : 'under-way'}`, actor: this.options.actor },
      });
      this.options.logger.warn({ secret: name, version: rotation.version }, 'gave up a rotation: a party of it is no longer assigned');
      return true;
    } catch (error) {
      this.options.logger.warn({ secret: name, err: error }, 'could not give up a rotation whose party is gone; trying again');
      return false;
    }
  }

  /**
   * A rotation's steps that wait on the vault (docs/decisions.md, "Rotating a secret"): the new
   * version made beside the current one, then — every party done — the old one dropped. Each is
   * asked of the vault first, then stated; the vault's make is idempotent by version, so a
   * controller restarted between the two asks again and states it then. False when the vault did
   * not answer.
   */
  private async rotate(state: MeshState, name: string, rotation: Rotation): Promise<boolean> {
    if (decideRotationPartiesGone(state, name, rotation.version).events.length > 0) return this.giveUp(name, rotation);
    const step = rotationStep(rotation).step;
    if (step !== 'making' && step !== 'retiring') return true;
    const wanted = wantedSecrets(state).get(name);
    const known = secretNamed(state.secrets, name);
    if (!wanted || !known) return true;
    const current = step === 'making' ? rotation.from : rotation.version;
    const decide = step === 'making' ? decideRotationMade : decideRotationRetired;
    try {
      await makeSecret(this.nc, { prefix: this.options.prefix, controller: this.options.controller, secret: name, purpose: known.purpose, version: rotation.version, current, recipients: recipientsOf(state, wanted) });
      await this.mesh.appendDecided({
        subject: `${step === 'making' ? 'recording the new version of' : 'retiring the old version of'} secret ${name}`,
        decide: (now) => decide(now, name, rotation.version),
        metadata: { commandId: `rotation:${name}:${rotation.version}:${step === 'making' ? 'made' : 'retired'}`, actor: this.options.actor },
      });
      this.options.logger.info({ secret: name, version: rotation.version, step }, step === 'making' ? 'the vault made the new version of a secret' : 'the vault retired the old version of a secret');
      return true;
    } catch (error) {
      if (error instanceof Refusal) this.options.logger.error({ secret: name, refused: error.problems }, 'a rotation step was refused');
      else this.options.logger.warn({ secret: name, err: error }, 'the vault did not answer a rotation step; asking again later');
      return false;
    }
  }
}

/** The recipients the vault can serve: those of the wanted nodes that have enrolled (their keys are in the log). */
const recipientsOf = (state: MeshState, wanted: WantedSecret): Recipient[] =>
  wanted.recipients.flatMap((name) => {
    const node = nodeNamed(state.nodes, name);
    return node?.publicKey && node.busKey ? [{ node: name, signingKey: node.busKey, sealingKey: node.publicKey }] : [];
  });
