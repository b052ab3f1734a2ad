import type { JetStreamClient } from '@nats-io/jetstream';
import { GENESIS_PREV, sealHeaders } from '../src/adapters/eventlog/chain.js';
import type { Identity } from '../src/adapters/identity.js';

// How a benchmark fills a fresh log fast: every commit signed and chained exactly as the log's
// writer does it, but published a window at a time rather than one after another — each on the
// condition that the log ends right before it (Nats-Expected-Last-Sequence), so a commit that
// arrived out of order would be refused, never stored with the wrong link.

export class ChainedPublisher {
  private seq = 0;
  private prev: Uint8Array = GENESIS_PREV;

  constructor(
    private readonly js: JetStreamClient,
    private readonly key: Identity,
  ) {}

  async publish(count: number, commit: (i: number) => { subject: string; payload: Uint8Array }, window = 512): Promise<void> {
    for (let from = 0; from < count; from += window) {
      const batch: Promise<unknown>[] = [];
      for (let i = from; i < Math.min(count, from + window); i++) {
        const { subject, payload } = commit(i);
        const seq = ++this.seq;
        // One writer wrote it all: each signature answers for everything before it, as the
        // controller's writer does for what it appended since it started.
        const { hash, headers } = sealHeaders(this.key, this.prev, subject, seq, payload, 1);
        this.prev = hash;
        batch.push(this.js.publish(subject, payload, { headers, expect: { lastSequence: seq - 1 } }));
      }
      await Promise.all(batch);
    }
  }
}
