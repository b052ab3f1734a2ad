import { randomUUID } from 'node:crypto';
import { AckPolicy, DeliverPolicy, JetStreamApiError, jetstream, jetstreamManager, type JsMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import { heldAt } from '../adapters/eventlog/chain-reader.js';
import { assertBuildWire, buildJobSubject, buildOutcomeSubject } from '../adapters/nats/build-streams.js';
import { assertControlStreams, eventsStreamName, type ControlStreamNames } from '../adapters/nats/control-streams.js';
import { sha256Digest } from '../domain/canonical.js';
import { graphInputOf } from '../domain/builds/decider.js';
import { assessGraph, attemptKey } from '../domain/builds/graph.js';
import { branchMovedSchema, buildOutcomeSchema, type BuildJob } from '../domain/builds/job.js';
import { unfinishedBuilds, type BuildRecord } from '../domain/builds/state.js';
import type { MeshState } from '../domain/mesh/state.js';
import { manifestOf } from '../domain/catalogue/state.js';
import { holderOf, seatNamed } from '../domain/seats/state.js';
import { MeshError, ValidationError } from '../errors.js';
import type { z } from 'zod';
import { LogHeldRefusal, type LogHold, type MeshService } from './mesh-service.js';
import type { MeshView } from './mesh-view.js';

// Beside the controller: turns a moved branch into builds and builds into versions. It follows the
// log, and after every change submits a build for each module that is stale and waits on nothing
// (no order is computed: the rest become buildable as their bases are registered); it hands every
// submitted build to the mesh-build-machine seat's queue; and it records what the seat's holder
// says — built or failed — and what the mesh-git holder says about branches, in the log.

export interface BuildCoordinatorOptions {
  names: ControlStreamNames;
  actor: string;
  logger: Logger;
  /** how long a builder may go silent before its job goes to another (default 60 s) */
  ackWaitMs?: number;
  newId?: () => string;
}

/** The control plane's own position in EVENTS: what it has recorded of the seats' events. */
const RECORDER = 'control-plane-builds';

/** A message's payload, or a ValidationError naming the subject: such a message is never recorded. */
const readable = <S extends z.ZodType>(schema: S, message: JsMsg): z.infer<S> => {
  let body: unknown;
  try {
    body = message.json();
  } catch {
    body = undefined;
  }
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw new ValidationError(`${message.subject}: ${parsed.error.issues.map((i) => `${i.path.join('.')} ${i.message}`).join('; ')}`, { field: message.subject });
  return parsed.data;
};

export class BuildCoordinator {
  private readonly abort = new AbortController();
  private readonly tasks: Promise<void>[] = [];
  private pending: Promise<void> = Promise.resolve();
  private dirty = false;
  /** builds whose job this process has handed to the queue */
  private readonly handed = new Set<string>();

  constructor(
    private readonly nc: NatsConnection,
    /** this process's view of the mesh: builds are decided on what it has folded */
    private readonly view: MeshView,
    private readonly mesh: MeshService,
    private readonly options: BuildCoordinatorOptions,
  ) {}

  async start(): Promise<void> {
    const jsm = await jetstreamManager(this.nc);
    await assertControlStreams(jsm, this.options.names);
    await assertBuildWire(this.nc, jsm, { prefix: this.options.names.prefix, ackWaitMs: this.options.ackWaitMs ?? 60_000, ...(this.options.names.replicas ? { replicas: this.options.names.replicas } : {}) });
    const stream = eventsStreamName(this.options.names);
    // nats-server 2.9 has no multi-subject filters: the recorder reads all of EVENTS and keeps
    // what concerns builds and branches (mesh-build-machine's and mesh-git's events, a module's pushed).
    const config = { durable_name: RECORDER, ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.All, ack_wait: 30_000_000_000, max_deliver: -1 };
    await jsm.consumers.add(stream, config).catch((error: unknown) => {
      if (!(error instanceof JetStreamApiError)) throw error;
    });
    this.view.onChange((_change, caughtUp) => {
      if (caughtUp) this.schedule();
    });
    if (this.view.isCaughtUp()) this.schedule();
    this.tasks.push(this.record(stream));
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await Promise.allSettled(this.tasks);
    await this.pending.catch(() => undefined);
  }

  /** The commit the builds' fold is held at, if any: no build is decided past it until it is voided. */
  held(): LogHold | undefined {
    return this.view.held();
  }

  private get state(): MeshState {
    return this.view.mesh();
  }

  /** One pass at a time; bursts of events coalesce into one more. */
  private schedule(): void {
    if (this.dirty || this.abort.signal.aborted || this.view.held()) return;
    this.dirty = true;
    this.pending = this.pending.then(async () => {
      await new Promise((r) => setImmediate(r));
      this.dirty = false;
      try {
        await this.pass();
      } catch (error) {
        this.options.logger.error({ err: error }, 'a build pass failed; trying again shortly');
        if (!this.abort.signal.aborted) setTimeout(() => this.schedule(), 500).unref();
      }
    });
  }

  private async pass(): Promise<void> {
    for (const build of unfinishedBuilds(this.state.builds)) if (!this.handed.has(build.buildId)) await this.handOut(build);
    const assessments = assessGraph(graphInputOf(this.state));
    for (const assessment of assessments.values()) {
      if (assessment.status !== 'stale') continue;
      // The command id names the work and the point it was decided at: a second coordinator
      // deciding at the same point is the same command; one deciding later sees the build submitted.
      const key = sha256Digest(attemptKey(assessment.plan.commit, assessment.plan.bases)).slice(7, 23);
      const result = await this.mesh
        .execute({ type: 'submit-build', module: assessment.module, buildId: (this.options.newId ?? randomUUID)(), registerOnly: false, requestedBy: 'coordinator' }, {
          commandId: `build:${assessment.module}:${key}:${this.state.seq}`,
          actor: this.options.actor,
        })
        .catch((error: unknown) => {
          if (error instanceof MeshError && error.code === 'refused') this.options.logger.warn({ module: assessment.module, err: error.message }, 'build not submitted');
          else throw error;
          return undefined;
        });
      if (result && result.events.length > 0) this.options.logger.info({ module: assessment.module, reasons: assessment.reasons, seq: result.seq }, 'build submitted');
    }
  }

  /** The job for a submitted build, on the seat's queue; its id is the build's, so handing it twice queues it once. */
  private async handOut(build: BuildRecord): Promise<void> {
    const ref = manifestOf(this.state.catalogue, build.module)?.source?.ref;
    const job: BuildJob = { buildId: build.buildId, module: build.module, commit: build.commit, source: build.source, path: build.path, ...(ref ? { ref } : {}), recipe: build.recipe, output: build.output, bases: build.bases };
    await jetstream(this.nc).publish(buildJobSubject(this.options.names.prefix), JSON.stringify(job), { msgID: build.buildId });
    this.handed.add(build.buildId);
  }

  /** Records the seats' events in the log, in order; acknowledged only once recorded (or refused for good). */
  private async record(stream: string): Promise<void> {
    const consumer = await jetstream(this.nc).consumers.get(stream, RECORDER);
    while (!this.abort.signal.aborted) {
      const message = await consumer.next({ expires: 1_000 }).catch(() => null);
      if (!message) continue;
      try {
        await this.recordOne(message);
        message.ack();
      } catch (error) {
        if (error instanceof LogHeldRefusal || heldAt(error)) {
          // Not refused for good: the mesh cannot be read past a commit yet. It waits in EVENTS.
          this.options.logger.warn({ subject: message.subject, err: (error as Error).message }, 'an event waits: the log is held at a commit an operator has not voided');
          message.nak(5_000);
        } else if (error instanceof MeshError && (error.code === 'refused' || error.code === 'validation')) {
          this.options.logger.warn({ subject: message.subject, err: error.message }, 'an event the mesh does not record');
          message.term();
        } else {
          this.options.logger.warn({ subject: message.subject, err: error }, 'recording an event failed; it comes round again');
          message.nak(1_000);
        }
      }
    }
  }

  private async recordOne(message: JsMsg): Promise<void> {
    const prefix = this.options.names.prefix;
    const metadata = (id: string) => ({ commandId: id, actor: this.options.actor });
    if (message.subject === buildOutcomeSubject(prefix, 'built') || message.subject === buildOutcomeSubject(prefix, 'failed')) {
      // Who speaks: only the holder of mesh-build-machine may publish its seat's events (users.ts
      // moduleUser; users of the seat publish only its `accept` subjects), so the subject is the
      // builder. The body names no identity this acts on — `builder` is a free-text label, logged —
      // and a build is recorded only if the mesh handed it out (record-build's decider).
      const said = readable(buildOutcomeSchema, message);
      const outcome = said.outcome === 'built' ? ({ kind: 'built', digest: said.digest, bases: said.bases } as const) : ({ kind: 'failed', reason: said.reason, output: said.output } as const);
      const result = await this.mesh.execute({ type: 'record-build', buildId: said.buildId, module: said.module, commit: said.commit, outcome }, metadata(`recorded:${said.buildId}`));
      this.options.logger.info({ buildId: said.buildId, module: said.module, builder: said.builder }, result.summary);
      return;
    }
    const verb = /\.event\.(pushed|pull\.merged|repository\.pushed)$/.exec(message.subject)?.[1];
    if (!verb) return;
    // A module's own event counts only from the module that holds mesh-git now.
    const emitter = new RegExp(`^${prefix.replace(/\./g, '\\.')}\\.mod\\.([^.]+)\\.event\\.`).exec(message.subject)?.[1];
    const state = await this.mesh.current();
    const gitSeat = seatNamed(state.seats, 'mesh-git');
    const holder = gitSeat ? holderOf(state.seats, gitSeat.id, 'mesh') : undefined;
    if (emitter && holder?.module !== emitter) return;
    const said = readable(branchMovedSchema, message);
    const ref = said.branch ?? said.ref?.replace(/^refs\/heads\//, '') ?? 'main';
    const heardFrom = holder ? `mesh-git holder ${holder.node}/${holder.module}` : 'mesh-git';
    await this.mesh.execute({ type: 'move-source', source: { seat: 'mesh-git', repository: said.repository }, ref, commit: said.commit, heardFrom }, metadata(`moved:${message.info.streamSequence}`));
  }
}
