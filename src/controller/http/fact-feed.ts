import type { Logger } from 'pino';
import type { EventLog } from '../../adapters/eventlog/event-log.js';
import { passedLine, warnPassed } from '../../adapters/eventlog/chain-reader.js';
import type { MeshEvent, StoredMeshEvent } from '../../domain/registry.js';
import type { LogHold } from '../mesh-service.js';

// Facts as they are stated, for the page: the most recent few and every new one, from the log
// itself (the facts' own aggregate kind), so what the page shows is what the log says. A fact
// commit that does not verify holds the feed there (said once) until an operator voids it.

export class FactFeed {
  private readonly recent: StoredMeshEvent[] = [];
  private readonly listeners = new Set<(fact: StoredMeshEvent) => void>();
  private readonly abort = new AbortController();
  private running: Promise<void> | undefined;
  private hold: LogHold | undefined;

  constructor(
    private readonly log: EventLog<MeshEvent>,
    private readonly keep = 50,
    private readonly logger?: Logger,
  ) {}

  /**
   * Follows the facts from a little before the head. `after`: not before this settles — a
   * controller starts its feed once its fold has caught up, so checking the past facts' signatures
   * one by one never slows the start of what answers commands.
   */
  async start(after: Promise<unknown> = Promise.resolve()): Promise<void> {
    this.running = (async () => {
      await after;
      if (this.abort.signal.aborted) return;
      // Enough of the past to show the latest facts without reading a long log from its start.
      const fromSeq = Math.max(1, (await this.log.headSeq()) - 5_000);
      for await (const item of this.log.follow({ aggregate: 'fact', fromSeq, signal: this.abort.signal })) {
        if (item.kind === 'held') {
          this.hold = { seq: item.seq, aggregate: item.aggregate, problem: item.problem, since: new Date() };
          this.logger?.error({ seq: item.seq, aggregate: item.aggregate, problem: item.problem }, `the log holds the fact feed at seq ${item.seq}: no later fact reaches the page until an operator voids it`);
          continue;
        }
        if (item.kind === 'passed') {
          this.hold = undefined;
          if (this.logger) this.logger.warn({ seq: item.commit.seq, voidSeq: item.commit.voidSeq, by: item.commit.actor }, passedLine(item.commit));
          else warnPassed(item.commit);
          continue;
        }
        if (item.kind !== 'event') continue;
        this.recent.push(item.event);
        if (this.recent.length > this.keep) this.recent.shift();
        for (const listener of this.listeners) listener(item.event);
      }
    })();
    this.running.catch((error: unknown) => this.logger?.error({ err: error }, 'the fact feed stopped following the log'));
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.running?.catch(() => undefined);
  }

  /** The fact commit the feed is held at, if any. */
  held(): LogHold | undefined {
    return this.hold;
  }

  latest(): StoredMeshEvent[] {
    return [...this.recent];
  }

  subscribe(listener: (fact: StoredMeshEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
