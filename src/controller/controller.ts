import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import type { Identity } from '../adapters/identity.js';
import type { EventLog } from '../adapters/eventlog/event-log.js';
import { assertControlStreams } from '../adapters/nats/control-streams.js';
import { sha256Digest } from '../domain/canonical.js';
import { composeDeclaration } from '../domain/declarations/compose.js';
import { DeclarationRefused } from '../domain/declarations/events.js';
import type { MeshState } from '../domain/mesh/state.js';
import type { MeshEvent } from '../domain/registry.js';
import { DeclarationInputs } from '../domain/declarations/inputs.js';
import type { BusAuthority } from './bus-authority.js';
import { DeclarationPublisher, type PublishOutcome } from './declaration-publisher.js';
import type { LogHold, MeshService } from './mesh-service.js';
import type { MeshView } from './mesh-view.js';
import { allNodes, nodeNamed } from '../domain/nodes/state.js';
import { BUS_USER_EVENT_TYPES } from '../domain/bus/users.js';
import { refusalStatedFor } from '../domain/declarations/state.js';

// Derives each node's declaration from the process's view of the mesh (mesh-view.ts) and publishes
// those whose content changed. Incremental, as a reconciler is: each folded event marks the nodes
// whose declaration inputs it changes (declarations/inputs.ts), and a pass composes only those —
// every node once, after the view has caught up, and nothing before it has, so a restart never
// sends a declaration older than the last. While the view is held at a commit that does not
// verify or read, nothing past it is declared.

export interface ControllerNames {
  nodesStream: string;
  controlStream: string;
  /** subject prefix of NODES and CONTROL: `mesh` */
  prefix: string;
  /** copies the bus keeps of each stream (streamReplicas): 1 when absent */
  replicas?: number;
}

export interface ControllerOptions {
  names: ControllerNames;
  actor: string;
  /** the controller's key (the one that signs the log's commits): every declaration is signed with it, and a node applies no other */
  controllerKey: Identity;
  logger: Logger;
  /** called after each pass over the nodes; tests and benchmarks watch it */
  onPass?: (pass: DeclarationPass) => void;
  /** the bus's user list, composed again before each pass so nobody is told to start before it may speak */
  busAuthority?: BusAuthority;
  /** the process's mesh service: its one writer states refusals in order with everything else (else appended on their own) */
  mesh?: Pick<MeshService, 'appendDecided'>;
}

export interface DeclarationPass {
  seq: number;
  published: string[];
  unchanged: number;
  refused: string[];
  /** how many nodes were composed: those the events since the last pass reached */
  composed: number;
  /** the whole pass: composing, and publishing what changed */
  millis: number;
  /** composing alone: deciding which nodes a change reached and composing them */
  deriveMillis: number;
}

const OVERCOME = Symbol('a declaration was published since the last refusal');

export class Controller {
  private readonly publisher: DeclarationPublisher;
  private pending: Promise<void> = Promise.resolve();
  private stopped = false;
  private dirty = false;
  /** what each node's last composition read, so an event recomposes only the nodes it reaches */
  private readonly inputs = new DeclarationInputs();
  /** reached by the events folded since the last pass */
  private readonly reachedSincePass = { nodes: new Set<string>(), inputs: new Set<string>(), all: true };
  /** whether an event since the last pass can have changed the bus's user list (composed once at the first pass either way) */
  private busUsersTouched = true;
  /**
   * What this controller knows beyond the log about each node's refusal: the one it just stated
   * (before its follower has folded it), or that a declaration was published since. The fold
   * keeps only what the log says: the last refusal stated.
   */
  private readonly refusalsStated = new Map<string, { reason: string; seq: number } | typeof OVERCOME>();

  constructor(
    private readonly nc: NatsConnection,
    private readonly view: MeshView,
    private readonly log: EventLog<MeshEvent>,
    private readonly options: ControllerOptions,
  ) {
    this.publisher = new DeclarationPublisher(nc, { nodesStream: options.names.nodesStream, prefix: options.names.prefix, signer: options.controllerKey });
  }

  /** The mesh as this process's view has folded it so far. */
  mesh(): MeshState {
    return this.view.mesh();
  }

  /** The commit the fold is held at, if any: nothing after it is folded or declared until it is voided. */
  held(): LogHold | undefined {
    return this.view.held();
  }

  /** Resolves once this process's view has folded `seq`. */
  reached(seq: number): Promise<void> {
    return this.view.reached(seq);
  }

  async start(): Promise<void> {
    await assertControlStreams(await jetstreamManager(this.nc), {
      nodes: this.options.names.nodesStream,
      control: this.options.names.controlStream,
      prefix: this.options.names.prefix,
      ...(this.options.names.replicas ? { replicas: this.options.names.replicas } : {}),
    });
    this.view.onChange((change, caughtUp) => {
      if (change.kind === 'event') {
        const touched = this.inputs.touched(this.view.mesh(), change.event);
        if (touched.all) this.reachedSincePass.all = true;
        for (const node of touched.nodes) this.reachedSincePass.nodes.add(node);
        for (const input of touched.inputs) this.reachedSincePass.inputs.add(input);
        if (BUS_USER_EVENT_TYPES.has(change.event.type)) this.busUsersTouched = true;
      }
      if (change.kind === 'rebuilt') {
        this.reachedSincePass.all = true;
        this.busUsersTouched = true;
      }
      // Nothing is published until the view has caught up: a restart never sends a declaration older than the last.
      if (caughtUp) this.schedule();
    });
    if (this.view.isCaughtUp()) this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.options.busAuthority?.stop();
    await this.pending.catch(() => undefined);
  }

  /** Coalesces bursts: one pass runs at a time, and one more follows if anything changed meanwhile. */
  private schedule(): void {
    if (this.dirty) return;
    this.dirty = true;
    this.pending = this.pending.then(async () => {
      await new Promise((r) => setImmediate(r));
      this.dirty = false;
      try {
        if (this.busUsersTouched) {
          this.busUsersTouched = false;
          // Not written (the file or the server refused): composed again at the next pass.
          if ((await this.options.busAuthority?.sync(this.view.mesh())) === false) this.busUsersTouched = true;
        }
        await this.declareReached();
      } catch (error) {
        this.options.logger.error({ err: error }, 'deriving declarations failed; trying again shortly');
        if (!this.stopped) setTimeout(() => this.schedule(), 500).unref();
      }
    });
  }

  /** Composes the nodes the events since the last pass reached (every node after catching up), publishing what changed. */
  private async declareReached(): Promise<void> {
    const started = Date.now();
    const reaching = performance.now();
    const state = this.view.mesh();
    let seq = state.seq;
    const nodes = this.reachedSincePass.all ? [...allNodes(state.nodes)].map((n) => n.name) : [...this.inputs.nodesReached(state, { nodes: [...this.reachedSincePass.nodes], inputs: [...this.reachedSincePass.inputs], all: false })];
    this.reachedSincePass.all = false;
    this.reachedSincePass.nodes.clear();
    this.reachedSincePass.inputs.clear();
    const pass: DeclarationPass = { seq, published: [], unchanged: 0, refused: [], composed: 0, millis: 0, deriveMillis: performance.now() - reaching };
    // Composed at a moment the view holds only what the log has stored: never from a command of
    // this process still in flight (mesh-writer.ts), which the log may yet refuse.
    const retired: string[] = [];
    const compositions = await this.view.whenSettled(() => {
      seq = state.seq;
      return nodes.sort().flatMap((node) => {
        if (!nodeNamed(state.nodes, node)) {
          this.inputs.forget(node);
          retired.push(node);
          return [];
        }
        const composing = performance.now();
        const composition = composeDeclaration(state, node);
        this.inputs.record(state, node);
        pass.composed++;
        pass.deriveMillis += performance.now() - composing;
        return [{ node, composition }];
      });
    });
    pass.seq = seq;
    // A node no longer in the mesh (removed) is left an empty declaration, so an agent still
    // listening stops what it ran; one never declared to is left without a subject.
    for (const node of retired) {
      if (!(await this.publisher.lastPublished(node))) continue;
      const empty = composeDeclaration(state, node);
      if (empty.ok && (await this.publisher.publish(empty.declaration, seq)).published) pass.published.push(node);
    }
    for (const { node, composition } of compositions) {
      if (!composition.ok) {
        await this.stateRefusal(node, composition.problems, seq);
        pass.refused.push(node);
        continue;
      }
      const outcome: PublishOutcome = await this.publisher.publish(composition.declaration, seq);
      if (outcome.published) {
        pass.published.push(node);
        this.refusalsStated.set(node, OVERCOME);
        this.options.logger.info({ node, sequence: outcome.declaration.sequence, digest: outcome.declaration.digest, derivedFromSeq: seq }, 'declaration published');
      } else pass.unchanged++;
    }
    pass.millis = Date.now() - started;
    this.options.onPass?.(pass);
  }

  /** A refusal is stated once per distinct reason while it lasts. */
  private async stateRefusal(node: string, unresolved: { what: string; why: string; remedy: string }[], seq: number): Promise<void> {
    const reason = sha256Digest(unresolved);
    const stated = this.refusalsStated.get(node) ?? refusalStatedFor(this.view.mesh().declarations, node);
    if (stated !== OVERCOME && stated?.reason === reason) return;
    const aggregate = `node.${node}`;
    const events = [{ type: DeclarationRefused.type, data: { node, derivedFromSeq: seq, reason, unresolved } }];
    const metadata = { commandId: `declaration-refused:${node}:${reason.slice(7, 23)}:${seq}`, actor: this.options.actor };
    const appended = this.options.mesh
      ? await this.options.mesh.appendDecided({ subject: `the refusal of ${node}'s declaration`, decide: () => ({ aggregate, events, summary: `declaration of ${node} refused` }), metadata })
      : await this.log.append(aggregate, events, this.view.mesh().versions.get(aggregate) ?? 0, metadata);
    this.refusalsStated.set(node, { reason, seq: appended.seq });
    this.options.logger.warn({ node, unresolved }, 'declaration not composed; the previous one stands');
  }
}
