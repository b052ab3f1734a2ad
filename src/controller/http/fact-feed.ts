import type { EventLog } from '../../adapters/eventlog/event-log.js';
import type { StoredEvent } from '../../domain/events/envelope.js';

// Facts as they are stated, for the page: the most recent few and every new one, from the log
// itself (the facts' own aggregate kind), so what the page shows is what the log says.

export class FactFeed {
  private readonly recent: StoredEvent[] = [];
  private readonly listeners = new Set<(fact: StoredEvent) => void>();
  private readonly abort = new AbortController();
  private running: Promise<void> | undefined;

  constructor(
    private readonly log: EventLog,
    private readonly keep = 50,
  ) {}

  async start(): Promise<void> {
    // Enough of the past to show the latest facts without reading a long log from its start.
    const fromSeq = Math.max(1, (await this.log.headSeq()) - 5_000);
    this.running = (async () => {
      for await (const item of this.log.follow({ aggregate: 'fact', fromSeq, signal: this.abort.signal })) {
        if (item.kind !== 'event') continue;
        this.recent.push(item.event);
        if (this.recent.length > this.keep) this.recent.shift();
        for (const listener of this.listeners) listener(item.event);
      }
    })();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.running?.catch(() => undefined);
  }

  latest(): StoredEvent[] {
    return [...this.recent];
  }

  subscribe(listener: (fact: StoredEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
