// The last (version, stream sequence) this process saw for each aggregate, so a conditioned append
// usually needs no read first. Only a hint: the server's expected-sequence check is the guard, and
// a stale entry costs one refused publish and a re-read.

export interface AggregateHead {
  version: number;
  seq: number;
}

export class AggregateHeads {
  private readonly entries = new Map<string, AggregateHead>();

  constructor(private readonly capacity: number) {}

  get(aggregate: string): AggregateHead | undefined {
    return this.entries.get(aggregate);
  }

  set(aggregate: string, head: AggregateHead): void {
    const known = this.entries.get(aggregate);
    // Concurrent appends can finish out of order; never move a head backwards.
    if (known && known.seq > head.seq) return;
    this.entries.delete(aggregate);
    this.entries.set(aggregate, head);
    if (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
  }

  forget(aggregate: string): void {
    this.entries.delete(aggregate);
  }
}
