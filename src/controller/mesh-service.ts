import type { EventLog } from '../adapters/eventlog/event-log.js';
import type { MeshEvent, StoredMeshEvent } from '../domain/registry.js';
import { heldAt, heldError, warnPassed, type PassedCommit } from '../adapters/eventlog/chain-reader.js';
import type { CommandMetadata } from '../domain/events/envelope.js';
import { voidAggregate } from '../domain/log/events.js';
import type { VoidCommit } from '../domain/log/void.js';
import { decideMeshCommand, type MeshCommand } from '../domain/mesh/commands.js';
import type { SignedCommand } from '../domain/operators/signed-command.js';
import { emptyMeshState, evolveMesh, type MeshState } from '../domain/mesh/state.js';
import { Refusal } from '../domain/refusal.js';
import { ConcurrencyError } from '../errors.js';
import { commandIdReuse } from './command-reuse.js';
import { commandCarriedOut, recentCommand, type CommandAt } from '../domain/mesh/command-index.js';
import type { Decision } from '../domain/decision.js';
import type { MeshWriter } from './mesh-writer.js';
import type { FoldSnapshots, FoldStart } from './fold-snapshots.js';
import { planMesh, type MeshPlan } from '../domain/declarations/plan.js';

// Where a mesh command meets the log. Every rule of the mesh reads more than one aggregate (a seat
// is declared once across modules; an assignment resolves against every provider), so a command is
// decided against the whole log as of one sequence and appended only if the log still ends there
// (Nats-Expected-Last-Sequence), its events filed under the one aggregate it is about. A command
// that lost the race is decided again against the new state, a bounded number of times.
// docs/consistency.md says which aggregate carries each invariant.
//
// The fold stops at a commit that does not verify or read: the state stays as it was before it,
// every command but a void is refused naming the sequence, and the fold looks for a void again on
// a backoff (and at once after a void is recorded here).

export interface CommandResult {
  summary: string;
  /** the log sequence the outcome is at: the commit appended, or the state the no-op was judged on */
  seq: number;
  events: StoredMeshEvent[];
  /** the command had been carried out before (its acknowledgement was lost): nothing was appended */
  duplicate: boolean;
}

/** Where the fold is held, and why. */
export interface LogHold {
  seq: number;
  aggregate: string;
  problem: string;
  since: Date;
}

export interface MeshServiceOptions {
  maxAttempts?: number;
  /** told once per sequence the fold is held at */
  onHeld?: (hold: LogHold) => void;
  /** told of each voided commit the fold passes by (a warning on stderr when absent) */
  onPassed?: (passed: PassedCommit) => void;
  /** a fold of its own (no view given) starts from the newest snapshot of the controller's fold that holds (fold-snapshots.ts) */
  snapshots?: FoldSnapshots;
}

const RETRY = { initialMs: 250, maxMs: 10_000 };

/** A command refused because the fold is held at a commit: it may be sent again once that commit is voided. */
export class LogHeldRefusal extends Refusal {
  constructor(
    readonly hold: LogHold,
    subject: string,
  ) {
    super(subject, [
      {
        what: `log seq ${hold.seq}`,
        why: `the controller's view of the log is held at seq ${hold.seq} (${hold.aggregate}): ${hold.problem}; no command is decided on a mesh it cannot read to its end`,
        remedy: `an operator looks at that commit and voids it: mesh log void ${hold.seq} --reason "…"`,
      },
    ]);
    this.name = 'LogHeldRefusal';
  }
}

/**
 * Where a command service reads the mesh: the controller process's one followed view
 * (mesh-view.ts), or, in a process that follows nothing, a fold that catches up when asked.
 */
export interface MeshReader {
  /** The mesh as of the log's head, or up to the commit the fold is held at (`held` then says which). */
  atHead(): Promise<{ state: MeshState; held?: LogHold }>;
  /** Resolves once the fold has taken `seq` (or is held before it). */
  reached(seq: number): Promise<void>;
  /** Told of a commit this process appended, so the next command is decided on a view that holds it. */
  appended(seq: number, events: readonly StoredMeshEvent[], duplicate: boolean): Promise<void>;
  /** The mesh as far as the reader has folded, once it has caught up: no round trip to the log's head. */
  known?(): Promise<{ state: MeshState; held?: LogHold }>;
  /** A void was just recorded: a fold held at a commit looks again now rather than at its next backoff (a follower sees the void as it comes). */
  lookAgain?(): void;
}

/** A fold that reads the log from where it stopped each time it is asked: for a process that follows nothing. */
export class CatchUpFold implements MeshReader {
  private readonly state: MeshState = emptyMeshState();
  /** the catch-up under way; callers queue behind it */
  private catchingUp: Promise<void> = Promise.resolve();
  private held: LogHold | undefined;
  private retryAt = 0;
  private retryMs = RETRY.initialMs;
  private start: FoldStart | undefined;

  constructor(
    private readonly log: EventLog<MeshEvent>,
    private readonly options: Pick<MeshServiceOptions, 'onHeld' | 'onPassed' | 'snapshots'> = {},
  ) {}

  /** Where the fold started: a snapshot at its sequence, or seq 0 and why not (undefined before its first catch-up). */
  startedFrom(): FoldStart | undefined {
    return this.start;
  }

  /**
   * One catch-up runs at a time: callers served in parallel (tool calls, the page) would
   * otherwise read from the same sequence and fold the same events twice.
   */
  async atHead(): Promise<{ state: MeshState; held?: LogHold }> {
    const run = this.catchingUp.then(() => this.catchUp());
    this.catchingUp = run.catch(() => undefined);
    await run;
    return this.held ? { state: this.state, held: this.held } : { state: this.state };
  }

  async reached(seq: number): Promise<void> {
    if (this.state.seq < seq) await this.atHead();
  }

  /** Its own commit, as the log stored it, folded here unless a catch-up for another caller has folded it already. */
  async appended(seq: number, events: readonly StoredMeshEvent[], duplicate: boolean): Promise<void> {
    if (!duplicate && seq > this.state.seq) for (const event of events) evolveMesh(this.state, event);
  }

  /** After a void is recorded the fold looks again at once instead of at its next backoff. */
  lookAgain(): void {
    this.retryAt = 0;
  }

  private async catchUp(): Promise<void> {
    this.start ??= await this.startFromSnapshot();
    if (this.held && Date.now() < this.retryAt) return;
    try {
      for await (const event of this.log.read({ fromSeq: this.state.seq + 1, onPassed: (passed) => this.pass(passed) })) evolveMesh(this.state, event);
      this.held = undefined;
      this.retryMs = RETRY.initialMs;
    } catch (error) {
      const at = heldAt(error);
      if (!at) throw error;
      if (this.held?.seq !== at.seq) {
        this.held = { seq: at.seq, aggregate: at.aggregate, problem: at.problem, since: new Date() };
        this.options.onHeld?.(this.held);
      }
      this.retryAt = Date.now() + this.retryMs;
      this.retryMs = Math.min(this.retryMs * 2, RETRY.maxMs);
    }
  }

  /** Before the first catch-up: the newest snapshot that holds becomes the fold (seq 1 otherwise). */
  private async startFromSnapshot(): Promise<FoldStart> {
    if (!this.options.snapshots) return { seq: 0, snapshot: false, reason: 'this process keeps no snapshots of its fold' };
    const loaded = await this.options.snapshots.load();
    if ('state' in loaded) Object.assign(this.state, loaded.state);
    return loaded.start;
  }

  /** A voided commit counts as folded: the next read starts after it, and the next command expects the log to end there. */
  private pass(passed: PassedCommit): void {
    this.state.seq = Math.max(this.state.seq, passed.seq);
    (this.options.onPassed ?? warnPassed)(passed);
  }
}

export class MeshService {
  private readonly reader: MeshReader;
  private readonly maxAttempts: number;

  /**
   * `reader`: the process's view of the mesh; without one, a fold of its own that catches up when
   * asked. `writer`: the process's one writer, deciding and issuing commands in order against the
   * view (the controller's); without one, each command is decided and appended on its own.
   */
  constructor(
    private readonly log: EventLog<MeshEvent>,
    private readonly options: MeshServiceOptions = {},
    reader?: MeshReader,
    private readonly writer?: MeshWriter,
  ) {
    this.reader = reader ?? new CatchUpFold(log, options);
    this.maxAttempts = options.maxAttempts ?? 20;
  }

  /** The mesh as far as the log can be read: at its head, or up to the commit the fold is held at (`held` then says which). */
  view(): Promise<{ state: MeshState; held?: LogHold }> {
    return this.reader.atHead();
  }

  /**
   * The mesh as this process knows it, without asking the log where its head is: for a process
   * whose one writer appends everything (its view holds all it wrote), the operators a command is
   * checked against. Elsewhere, the log's head.
   */
  known(): Promise<{ state: MeshState; held?: LogHold }> {
    return this.reader.known?.() ?? this.reader.atHead();
  }

  /** The mesh as of the log's head; throws, naming the sequence, while the fold is held. */
  async current(): Promise<MeshState> {
    const { state, held } = await this.view();
    if (held) throw heldError(held.seq, held.aggregate, held.problem);
    return state;
  }

  /** `signed`: the operator's signed command, kept in the log with the events it caused. */
  async execute(command: MeshCommand, metadata: CommandMetadata, options: { signed?: SignedCommand } = {}): Promise<CommandResult> {
    if (command.type === 'void-commit') return this.voidCommit(command, metadata, options);
    return this.appendDecided({ subject: `${command.type} (command ${metadata.commandId})`, decide: (state) => decideMeshCommand(command, state), metadata, ...options });
  }

  /**
   * What `commands` would do, decided in turn against the mesh at the log's head as it is carried
   * out, on a copy: what would be appended and each node's declaration before and after. Appends
   * nothing. A void is judged by what the log holds at its sequence, as carrying it out would.
   */
  async plan(commands: readonly MeshCommand[], metadata: CommandMetadata, now: Date): Promise<MeshPlan> {
    const { state, held } = await this.view();
    const voids = commands.filter((command) => command.type === 'void-commit');
    const found = new Map(await Promise.all(voids.map(async (command) => [command.seq, await this.log.inspect(command.seq)] as const)));
    if (held && voids.length === 0) throw new LogHeldRefusal(held, `planning ${commands.map((c) => c.type).join(', ')}`);
    const steps = commands.map((command) => (at: MeshState) => decideMeshCommand(command.type === 'void-commit' ? { ...command, found: found.get(command.seq) } : command, at));
    return planMesh(state, steps, metadata, now.toISOString());
  }

  /**
   * Appends what `decide` makes of the mesh as of one sequence, only if the log still ends there:
   * through the process's one writer when it has one (mesh-writer.ts), else decided again against
   * the new state when another append got in first, a bounded number of times. A command the log
   * holds already is answered with its earlier outcome.
   */
  async appendDecided(request: { subject: string; decide: (state: MeshState) => Decision; metadata: CommandMetadata; signed?: SignedCommand }): Promise<CommandResult> {
    const { metadata, signed } = request;
    const duplicate = async (earlier: CommandAt): Promise<CommandResult> => {
      if (signed) this.refuseReuse(signed, (await this.log.readAggregate(earlier.aggregate)).events);
      return { summary: `command ${metadata.commandId} was already carried out at seq ${earlier.seq}`, seq: earlier.seq, events: [], duplicate: true };
    };
    const aggregateOf = (state: MeshState) => (): string | undefined => {
      try {
        return request.decide(state).aggregate;
      } catch {
        return undefined;
      }
    };
    if (this.writer) {
      // A "perhaps" is settled against the log before the writer takes the command: what the log
      // holds before the recent commands never changes, and reading it must not hold up the
      // commands behind this one. Inside, only the recent set is looked at again.
      const { state } = await this.known();
      const before = await this.carriedOut(state, metadata.commandId, aggregateOf(state));
      return this.writer.append({
        ...request,
        earlier: (now) => recentCommand(now.commands, metadata.commandId) ?? before,
        duplicate,
        heldRefusal: (hold) => new LogHeldRefusal(hold, request.subject),
      });
    }
    for (let attempt = 1; ; attempt++) {
      const { state, held } = await this.view();
      if (held) throw new LogHeldRefusal(held, request.subject);
      const earlier = await this.carriedOut(state, metadata.commandId, aggregateOf(state));
      if (earlier) return duplicate(earlier);
      const decision = request.decide(state);
      if (decision.events.length === 0) return { summary: decision.summary, seq: state.seq, events: [], duplicate: false };
      try {
        const result = await this.log.append(decision.aggregate, decision.events, state.versions.get(decision.aggregate) ?? 0, metadata, {
          expectedLogSeq: state.seq,
          ...(signed ? { signed } : {}),
        });
        // The next command is decided on a view that holds this one.
        await this.reader.appended(result.seq, result.events, result.duplicate);
        return { summary: decision.summary, seq: result.seq, events: result.events, duplicate: result.duplicate };
      } catch (error) {
        if (!(error instanceof ConcurrencyError) || attempt >= this.maxAttempts) throw error;
        // Someone appended in between: back off a little, with jitter, and decide again.
        await new Promise((r) => setTimeout(r, Math.random() * 5 * attempt));
      }
    }
  }

  /**
   * Where the log holds command `id`, if it does. The fold knows the recent commands exactly and
   * the older ones only as "perhaps" (command-index.ts): the log settles a "perhaps" — the
   * aggregate this command would be filed under, then, if it is not there, every commit the
   * filter stands for. Rare (about one new command in ten thousand, and real retries of old ones).
   */
  private async carriedOut(state: MeshState, id: string, aggregateOf: () => string | undefined): Promise<CommandAt | undefined> {
    const found = commandCarriedOut(state.commands, id);
    if (found !== 'perhaps') return found;
    const aggregate = aggregateOf();
    if (aggregate) {
      const own = (await this.log.readAggregate(aggregate)).events.find((event) => event.commandId === id);
      if (own) return { seq: own.seq, aggregate: own.aggregate };
    }
    const through = state.commands.olderThrough;
    for await (const event of this.log.read({ fromSeq: 1 })) {
      if (event.seq > through) break;
      if (event.commandId === id) return { seq: event.seq, aggregate: event.aggregate };
    }
    return undefined;
  }

  /** A signed command whose id the log holds for another command is refused, naming it (command-reuse.ts). */
  private refuseReuse(signed: SignedCommand, aggregateEvents: readonly StoredMeshEvent[]): void {
    const refusal = commandIdReuse(signed, aggregateEvents.filter((event) => event.commandId === signed.commandId));
    if (refusal) throw refusal;
  }

  /**
   * A void is judged by the log itself, not by the fold (which may be held right there): what the
   * log holds at the sequence, read now. It is appended with its own aggregate's expectation only,
   * so it lands whatever was appended after the commit it voids.
   */
  private async voidCommit(command: VoidCommit, metadata: CommandMetadata, options: { signed?: SignedCommand }): Promise<CommandResult> {
    const aggregate = voidAggregate(command.seq);
    for (let attempt = 1; ; attempt++) {
      const history = await this.log.readAggregate(aggregate);
      const earlier = history.events.find((event) => event.commandId === metadata.commandId);
      if (earlier && options.signed) this.refuseReuse(options.signed, history.events);
      if (earlier) return { summary: `command ${metadata.commandId} was already carried out at seq ${earlier.seq}`, seq: earlier.seq, events: [], duplicate: true };
      // What the operator sent says which sequence and why; what is there is read here, never taken from the sender.
      const decision = decideMeshCommand({ type: 'void-commit', seq: command.seq, reason: command.reason, found: await this.log.inspect(command.seq) }, (await this.reader.atHead()).state);
      try {
        const result = await this.log.append(decision.aggregate, decision.events, history.version, metadata, options.signed ? { signed: options.signed } : {});
        this.reader.lookAgain?.();
        return { summary: decision.summary, seq: result.seq, events: result.events, duplicate: result.duplicate };
      } catch (error) {
        // Another void of the same sequence landed in between: judged again, it is refused as done.
        if (!(error instanceof ConcurrencyError) || attempt >= 3) throw error;
      }
    }
  }
}
