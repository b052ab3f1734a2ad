import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import type { EventLog } from '../adapters/eventlog/event-log.js';
import type { MeshEvent } from '../domain/registry.js';
import { passedLine } from '../adapters/eventlog/chain-reader.js';
import { assertControlStreams } from '../adapters/nats/control-streams.js';
import { sha256Digest } from '../domain/canonical.js';
import { composeDeclaration } from '../domain/declarations/compose.js';
import { DeclarationRefused } from '../domain/declarations/events.js';
import { emptyMeshState, evolveMesh, type MeshState } from '../domain/mesh/state.js';
import { loadConfig } from '../config.js';
import { schemasFromEnv, type ProjectorSchemas } from '../projections/control.js';
import type { Projector } from '../projections/projector.js';
import type { BusAuthority } from './bus-authority.js';
import { DeclarationPublisher, type PublishOutcome } from './declaration-publisher.js';
import type { LogHold } from './mesh-service.js';
import { runMeshProjector } from './projections.js';

// The controller process: follows the log, keeps the mesh folded, and after every change derives
// each node's declaration, publishing those whose content changed. It publishes nothing until it
// has caught up with the log, so a restart never sends a declaration older than the last one.
// A commit that does not verify or read holds the fold there (said once, at error level, and
// available to the overview); the controller keeps serving, and goes on once an operator voids it.

export interface ControllerNames {
  nodesStream: string;
  controlStream: string;
  /** subject prefix of NODES and CONTROL: `mesh` */
  prefix: string;
}

export interface ControllerOptions {
  names: ControllerNames;
  /** PostgreSQL for the projections; without it the controller runs no projector */
  databaseUrl?: string;
  /** the log the projector reads and its schemas; MESH_LOG_* and MESH_PROJECTOR_SCHEMA / MESH_READ_SCHEMA when absent */
  projector?: { log?: { stream: string; subjectPrefix: string }; schemas?: ProjectorSchemas };
  actor: string;
  logger: Logger;
  /** called after each pass over the nodes; tests and benchmarks watch it */
  onPass?: (pass: DeclarationPass) => void;
  /** the bus's user list, composed again before each pass so nobody is told to start before it may speak */
  busAuthority?: BusAuthority;
}

export interface DeclarationPass {
  seq: number;
  published: string[];
  unchanged: number;
  refused: string[];
  millis: number;
}

export class Controller {
  private state: MeshState = emptyMeshState();
  private readonly publisher: DeclarationPublisher;
  private readonly abort = new AbortController();
  private running: Promise<void> | undefined;
  private caughtUp = false;
  private pending: Promise<void> = Promise.resolve();
  private dirty = false;
  private projector: Promise<Projector<MeshEvent> | undefined> | undefined;
  private hold: LogHold | undefined;
  /** the last sequence the follower took (folded or passed): the state is also folded into by the report ingester, so its seq is not this */
  private followedTo = 0;

  constructor(
    private readonly nc: NatsConnection,
    private readonly log: EventLog<MeshEvent>,
    private readonly options: ControllerOptions,
  ) {
    this.publisher = new DeclarationPublisher(nc, { nodesStream: options.names.nodesStream, prefix: options.names.prefix });
  }

  /** The mesh as this controller has folded it so far. */
  mesh(): MeshState {
    return this.state;
  }

  /** The commit the fold is held at, if any: nothing after it is folded or declared until it is voided. */
  held(): LogHold | undefined {
    return this.hold;
  }

  async start(): Promise<void> {
    await assertControlStreams(await jetstreamManager(this.nc), { nodes: this.options.names.nodesStream, control: this.options.names.controlStream, prefix: this.options.names.prefix });
    this.running = this.follow();
    if (this.options.databaseUrl) {
      const config = loadConfig();
      this.projector = runMeshProjector({
        nc: this.nc,
        log: this.log,
        databaseUrl: this.options.databaseUrl,
        source: this.options.projector?.log ?? { stream: config.logStream, subjectPrefix: config.logSubjectPrefix },
        schemas: this.options.projector?.schemas ?? schemasFromEnv(),
        actor: this.options.actor,
        logger: this.options.logger,
        signal: this.abort.signal,
        prefix: this.options.names.prefix,
      });
    }
  }

  async stop(): Promise<void> {
    this.abort.abort();
    this.options.busAuthority?.stop();
    const projector = this.projector;
    this.projector = undefined;
    await (await projector)?.stop();
    await this.running?.catch(() => undefined);
    await this.pending.catch(() => undefined);
  }

  private async follow(): Promise<void> {
    const logger = this.options.logger;
    while (!this.abort.signal.aborted) {
      try {
        for await (const item of this.log.follow({ fromSeq: this.followedTo + 1, signal: this.abort.signal })) {
          switch (item.kind) {
            case 'caught-up':
              this.caughtUp = true;
              logger.info({ seq: item.seq }, 'caught up with the log');
              break;
            case 'event':
              evolveMesh(this.state, item.event);
              this.followedTo = item.event.seq;
              break;
            case 'held':
              if (this.hold?.seq === item.seq) continue; // said once
              this.hold = { seq: item.seq, aggregate: item.aggregate, problem: item.problem, since: new Date() };
              logger.error(
                { seq: item.seq, aggregate: item.aggregate, problem: item.problem },
                `the log holds the controller at seq ${item.seq}: nothing after it is folded or declared until an operator voids it (mesh log void ${item.seq} --reason "…")`,
              );
              continue;
            case 'passed':
              this.hold = undefined;
              this.followedTo = item.commit.seq;
              this.state.seq = Math.max(this.state.seq, item.commit.seq);
              logger.warn({ seq: item.commit.seq, voidSeq: item.commit.voidSeq, by: item.commit.actor, reason: item.commit.reason }, passedLine(item.commit));
              break;
          }
          if (this.caughtUp) this.schedule();
        }
      } catch (error) {
        // The bus or the stream went away under the follower: follow again from where the fold is.
        if (this.abort.signal.aborted) return;
        logger.error({ err: error, seq: this.followedTo }, 'following the log failed; following again shortly');
        await new Promise((r) => setTimeout(r, 1_000));
      }
    }
  }

  /** Coalesces bursts: one pass runs at a time, and one more follows if anything changed meanwhile. */
  private schedule(): void {
    if (this.dirty) return;
    this.dirty = true;
    this.pending = this.pending.then(async () => {
      await new Promise((r) => setImmediate(r));
      this.dirty = false;
      try {
        await this.options.busAuthority?.sync(this.state);
        await this.declareAll();
      } catch (error) {
        this.options.logger.error({ err: error }, 'deriving declarations failed; trying again shortly');
        if (!this.abort.signal.aborted) setTimeout(() => this.schedule(), 500).unref();
      }
    });
  }

  private async declareAll(): Promise<void> {
    const started = Date.now();
    const seq = this.state.seq;
    const pass: DeclarationPass = { seq, published: [], unchanged: 0, refused: [], millis: 0 };
    for (const node of [...this.state.nodes.keys()].sort()) {
      const composition = composeDeclaration(this.state, node);
      if (!composition.ok) {
        await this.stateRefusal(node, composition.problems, seq);
        pass.refused.push(node);
        continue;
      }
      const outcome: PublishOutcome = await this.publisher.publish(composition.declaration, seq);
      if (outcome.published) {
        pass.published.push(node);
        this.state.declarationRefusals.delete(node);
        this.options.logger.info({ node, sequence: outcome.declaration.sequence, digest: outcome.declaration.digest, derivedFromSeq: seq }, 'declaration published');
      } else pass.unchanged++;
    }
    pass.millis = Date.now() - started;
    this.options.onPass?.(pass);
  }

  /** A refusal is stated once per distinct reason while it lasts. */
  private async stateRefusal(node: string, unresolved: { what: string; why: string; remedy: string }[], seq: number): Promise<void> {
    const reason = sha256Digest(unresolved);
    if (this.state.declarationRefusals.get(node)?.reason === reason) return;
    const aggregate = `node.${node}`;
    await this.log.append(aggregate, [{ type: DeclarationRefused.type, data: { node, derivedFromSeq: seq, reason, unresolved } }], this.state.versions.get(aggregate) ?? 0, {
      commandId: `declaration-refused:${node}:${reason.slice(7, 23)}:${seq}`,
      actor: this.options.actor,
    });
    this.state.declarationRefusals.set(node, { reason, seq });
    this.options.logger.warn({ node, unresolved }, 'declaration not composed; the previous one stands');
  }
}
