import type { Logger } from 'pino';
import type { EventLog } from '../adapters/eventlog/event-log.js';
import type { CommandMetadata } from '../domain/events/envelope.js';
import type { Decision } from '../domain/decision.js';
import type { MeshState } from '../domain/mesh/state.js';
import type { SignedCommand } from '../domain/operators/signed-command.js';
import type { MeshEvent, StoredMeshEvent } from '../domain/registry.js';
import { UnavailableError } from '../errors.js';
import type { CommandResult, LogHold } from './mesh-service.js';
import type { MeshView } from './mesh-view.js';

// The one writer of the mesh in this process. Every mesh rule reads more than one aggregate, so a
// command is decided against the whole mesh at one sequence and lands only if the log still ends
// there — and this writer keeps that true without making concurrent commands race for it. It
// decides them one at a time, in the order they came, each against the view as the commits
// before it leave it; issues each commit as the one after the last it issued (signed for that
// sequence, conditioned on the log ending at it: LogWriter.issue); folds it into the view at once;
// and goes on to the next without waiting for the server's acknowledgement. N commands at once
// cost about one round trip each, not N decisions against one head of which all but one lose.
//
// A command is answered only when its commit is stored, and a "nothing to do" only when every
// commit it was judged after is stored. When the log stores something else (another process
// appended) or does not answer, the commits folded ahead of it are not the log: the view folds
// the log again, and the commands in flight are decided again, once, against it.

export interface DecidedAppend {
  /** what the decision is about, for refusals and logs */
  subject: string;
  /** decides against the view; no events: nothing to change */
  decide: (state: MeshState) => Decision;
  metadata: CommandMetadata;
  signed?: SignedCommand;
  /** where the log holds this command already, if it does, judged against the view it is decided on */
  earlier: (state: MeshState) => { seq: number; aggregate: string } | undefined;
  /** a command the log holds already, answered as a duplicate (or refused, when its id names another command) */
  duplicate: (earlier: { seq: number; aggregate: string }) => Promise<CommandResult>;
  /** refused while the view is held at a commit */
  heldRefusal: (hold: LogHold) => Error;
}

const MAX_DECISIONS = 20;

export class MeshWriter {
  /** the deciding and issuing of one command at a time, in order */
  private section: Promise<void> = Promise.resolve();
  /** whether every commit issued so far was stored: settles once none is in flight */
  private storedSoFar: Promise<boolean> = Promise.resolve(true);
  private rebuilding: Promise<void> | undefined;

  constructor(
    private readonly log: EventLog<MeshEvent>,
    private readonly view: MeshView,
    private readonly options: { logger: Logger },
  ) {
    if (!log.issueAppend) throw new Error('the mesh writer needs a log that issues appends behind those in flight (JetStreamEventLog with a writer)');
  }

  async append(request: DecidedAppend): Promise<CommandResult> {
    for (let decision = 1; ; decision++) {
      await this.rebuilding;
      await this.view.whenCaughtUp();
      const outcome = await this.decideAndIssue(request);
      if (outcome.kind === 'answered') return outcome.result;
      if (outcome.kind === 'log-moved') {
        // Something of this process (or another) was appended outside this writer: decide on it.
        await this.view.reached(await this.log.headSeq());
      }
      if (decision >= MAX_DECISIONS) throw new UnavailableError(`${request.subject}: decided ${decision} times and the log moved each time; send it again`, { commandId: request.metadata.commandId });
    }
  }

  private async decideAndIssue(request: DecidedAppend): Promise<{ kind: 'answered'; result: CommandResult } | { kind: 'again' } | { kind: 'log-moved' }> {
    const release = await this.enter();
    let waitFor: Promise<{ kind: 'answered'; result: CommandResult } | { kind: 'again' }>;
    try {
      if (this.rebuilding) return { kind: 'again' };
      const hold = this.view.held();
      if (hold) throw request.heldRefusal(hold);
      const state = this.view.mesh();
      const earlier = request.earlier(state);
      const judgedAfter = this.storedSoFar;
      if (earlier) {
        waitFor = judgedAfter.then(async (stored) => (stored ? { kind: 'answered', result: await request.duplicate(earlier) } : { kind: 'again' }));
      } else {
        const decision = request.decide(state);
        if (decision.events.length === 0) {
          const summary = decision.summary;
          waitFor = judgedAfter.then((stored) => (stored ? { kind: 'answered', result: { summary, seq: state.seq, events: [], duplicate: false } } : { kind: 'again' }));
        } else {
          const appended = this.log.issueAppend!(decision.aggregate, decision.events, state.versions.get(decision.aggregate) ?? 0, request.metadata, {
            expectedLogSeq: state.seq,
            ...(request.signed ? { signed: request.signed } : {}),
          });
          const events = await appended.issued;
          if (!events) return { kind: 'log-moved' };
          this.view.foldOwn(events);
          const summary = decision.summary;
          const stored = appended.result.then(
            (result) => {
              if (result.kind !== 'stored') this.foldAgain(`the log did not store commit ${events[0]?.seq} (${result.kind})`);
              return result;
            },
            (error: unknown) => {
              this.foldAgain(`the log did not answer for commit ${events[0]?.seq}`);
              throw error;
            },
          );
          this.storedSoFar = Promise.all([judgedAfter, stored.then((r) => r.kind === 'stored', () => false)]).then(([before, mine]) => before && mine);
          waitFor = stored.then((result) =>
            result.kind === 'stored' ? { kind: 'answered', result: { summary, seq: result.append.seq, events: result.append.events as StoredMeshEvent[], duplicate: false } } : { kind: 'again' },
          );
        }
      }
    } finally {
      release();
    }
    return waitFor;
  }

  /** One command at a time decides and issues; the next enters as soon as this one is issued. */
  private async enter(): Promise<() => void> {
    let release!: () => void;
    const previous = this.section;
    this.section = new Promise<void>((resolve) => (release = resolve));
    await previous;
    // A declaration waits for the view to hold only stored commits: let it, before deciding more.
    if (this.view.settleWanted()) await this.view.whenSettled(() => undefined);
    return release;
  }

  /** The view holds a commit the log does not: once nothing is in flight, it folds the log again. */
  private foldAgain(why: string): void {
    if (this.rebuilding) return;
    this.options.logger.warn(why + '; folding the log again before deciding more');
    this.rebuilding = (async () => {
      // Until nothing is in flight: a command issued while this began is waited for too.
      for (let last; last !== this.storedSoFar; ) await (last = this.storedSoFar);
      await this.view.rebuild();
      this.storedSoFar = Promise.resolve(true);
    })().finally(() => (this.rebuilding = undefined));
  }
}
