import type { EventLog } from '../adapters/eventlog/event-log.js';
import type { CommandMetadata, StoredEvent } from '../domain/events/envelope.js';
import { decideMeshCommand, type MeshCommand } from '../domain/mesh/commands.js';
import type { SignedCommand } from '../domain/operators/signed-command.js';
import { emptyMeshState, evolveMesh, type MeshState } from '../domain/mesh/state.js';
import { ConcurrencyError } from '../errors.js';

// Where a mesh command meets the log. Every rule of the mesh reads more than one aggregate (a seat
// is declared once across modules; an assignment resolves against every provider), so a command is
// decided against the whole log as of one sequence and appended only if the log still ends there
// (Nats-Expected-Last-Sequence), its events filed under the one aggregate it is about. A command
// that lost the race is decided again against the new state, a bounded number of times.
// docs/consistency.md says which aggregate carries each invariant.

export interface CommandResult {
  summary: string;
  /** the log sequence the outcome is at: the commit appended, or the state the no-op was judged on */
  seq: number;
  events: StoredEvent[];
  /** the command had been carried out before (its acknowledgement was lost): nothing was appended */
  duplicate: boolean;
}

export class MeshService {
  private state: MeshState = emptyMeshState();
  /** the catch-up under way; callers queue behind it */
  private catchingUp: Promise<void> = Promise.resolve();

  constructor(
    private readonly log: EventLog,
    private readonly maxAttempts = 20,
  ) {}

  /**
   * The mesh as of the log's head. One catch-up runs at a time: callers served in parallel (tool
   * calls, the page) would otherwise read from the same sequence and fold the same events twice.
   */
  async current(): Promise<MeshState> {
    const run = this.catchingUp.then(async () => {
      for await (const event of this.log.read({ fromSeq: this.state.seq + 1 })) evolveMesh(this.state, event);
    });
    this.catchingUp = run.catch(() => undefined);
    await run;
    return this.state;
  }

  /** `signed`: the operator's signed command, kept in the log with the events it caused. */
  async execute(command: MeshCommand, metadata: CommandMetadata, options: { signed?: SignedCommand } = {}): Promise<CommandResult> {
    for (let attempt = 1; ; attempt++) {
      const state = await this.current();
      const earlier = state.commands.get(metadata.commandId);
      if (earlier) return { summary: `command ${metadata.commandId} was already carried out at seq ${earlier.seq}`, seq: earlier.seq, events: [], duplicate: true };
      const decision = decideMeshCommand(command, state);
      if (decision.events.length === 0) return { summary: decision.summary, seq: state.seq, events: [], duplicate: false };
      try {
        const result = await this.log.append(decision.aggregate, decision.events, state.versions.get(decision.aggregate) ?? 0, metadata, {
          expectedLogSeq: state.seq,
          ...(options.signed ? { signed: options.signed } : {}),
        });
        // Folded here unless a catch-up for another caller has folded this commit already.
        if (!result.duplicate && result.seq > this.state.seq) for (const event of result.events) evolveMesh(this.state, event);
        return { summary: decision.summary, seq: result.seq, events: result.events, duplicate: result.duplicate };
      } catch (error) {
        if (!(error instanceof ConcurrencyError) || attempt >= this.maxAttempts) throw error;
        // Someone appended in between: back off a little, with jitter, and decide again.
        await new Promise((r) => setTimeout(r, Math.random() * 5 * attempt));
      }
    }
  }
}
