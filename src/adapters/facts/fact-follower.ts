import { AckPolicy, DeliverPolicy, JetStreamApiError, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import type { StoredEvent } from '../../domain/events/envelope.js';
import { catchUpToolSubject, isAfter, START, type CatchUpPage, type FactPosition } from '../../domain/facts/catch-up.js';
import { factSubject } from '../../domain/facts/events.js';
import { UnavailableError } from '../../errors.js';

// Two ways for a consumer of the mesh's facts to come back from being away and miss nothing.
//
// `followFacts`: a durable consumer on EVENTS, named by the consumer; the server keeps its
// position, and a fact is acknowledged only once the consumer has asked for the next one.
//
// `catchUpAndFollow`: no state on the server. It subscribes to the facts first, then asks the
// `catch-up` tool for every fact after the consumer's own position, page by page, and only then
// hands over what arrived meanwhile: a fact stated during the catch-up is either in the answer or
// heard live, and every fact is handed over once, told apart by its log position.

export interface HeardFact {
  fact: StoredEvent;
  /** it came from the catch-up answer, not as it was stated: register it, announce nothing */
  replayed: boolean;
}

const factsFilter = (prefix: string): string => factSubject('fact.>', prefix);

export const positionOf = (fact: StoredEvent): FactPosition => ({ seq: fact.seq, index: fact.index });

export interface CatchUpOptions {
  prefix: string;
  asker: string;
  /** the last position this consumer holds; START when it has seen nothing */
  after?: FactPosition;
  signal?: AbortSignal;
  pageSize?: number;
  timeoutMs?: number;
  /** called after each page is handed over; a seam for tests */
  onPage?: (page: CatchUpPage<StoredEvent>) => Promise<void> | void;
}

export async function* catchUpAndFollow(nc: NatsConnection, options: CatchUpOptions): AsyncIterable<HeardFact> {
  const live: StoredEvent[] = [];
  let wake: (() => void) | undefined;
  const subscription = nc.subscribe(factsFilter(options.prefix), {
    callback: (error, message) => {
      if (error) return;
      live.push(message.json<StoredEvent>());
      wake?.();
    },
  });
  const stop = (): void => wake?.();
  options.signal?.addEventListener('abort', stop, { once: true });
  try {
    await nc.flush(); // the subscription is in place before the question is asked
    let last = options.after ?? START;
    let head = 0;
    for (let more = true; more && !options.signal?.aborted; ) {
      const reply = await nc.request(catchUpToolSubject(options.prefix), JSON.stringify({ asker: options.asker, after: last, limit: options.pageSize ?? 500 }), { timeout: options.timeoutMs ?? 10_000 });
      const page = reply.json<CatchUpPage<StoredEvent> | { ok: false; refused: { why: string }[] }>();
      if (!page.ok) throw new UnavailableError(`catch-up refused: ${page.refused.map((r) => r.why).join('; ')}`, { asker: options.asker });
      for (const fact of page.facts) {
        last = positionOf(fact);
        yield { fact, replayed: true };
      }
      last = page.next;
      head = page.head;
      more = page.more;
      await options.onPage?.(page);
    }
    // Everything at or below the answered head was in the answer; above it, each position once.
    const seen = new Set<string>();
    while (!options.signal?.aborted) {
      const fact = live.shift();
      if (!fact) {
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
        continue;
      }
      const position = positionOf(fact);
      if (fact.seq <= head || !isAfter(position, last)) continue;
      const key = `${position.seq}.${position.index}`;
      if (seen.has(key)) continue;
      seen.add(key);
      yield { fact, replayed: false };
    }
  } finally {
    options.signal?.removeEventListener('abort', stop);
    subscription.unsubscribe();
  }
}

export interface FollowFactsOptions {
  prefix: string;
  /** EVENTS, or the stream the prefix's facts are kept in */
  stream: string;
  /** the durable consumer's name: the consumer's own position on the server */
  name: string;
  /** facts at or before this position are passed over (a first start, or one redelivered after a crash) */
  after?: FactPosition;
  signal?: AbortSignal;
}

/** A durable consumer on the facts: it resumes where it was acknowledged, across restarts of either side. */
export async function* followFacts(nc: NatsConnection, options: FollowFactsOptions): AsyncIterable<StoredEvent> {
  const jsm = await jetstreamManager(nc);
  await jsm.consumers
    .add(options.stream, { durable_name: options.name, ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.All, filter_subject: factsFilter(options.prefix), max_deliver: -1, ack_wait: 30_000_000_000 })
    .catch((error: unknown) => {
      // It exists already: it keeps its own position.
      if (!(error instanceof JetStreamApiError)) throw error;
    });
  const consumer = await jetstream(nc).consumers.get(options.stream, options.name);
  const messages = await consumer.consume({ max_messages: 256 });
  const stop = (): void => void messages.stop();
  options.signal?.addEventListener('abort', stop, { once: true });
  let last = options.after ?? START;
  try {
    for await (const message of messages) {
      const fact = message.json<StoredEvent>();
      if (isAfter(positionOf(fact), last)) {
        last = positionOf(fact);
        yield fact;
      }
      // Acknowledged once the consumer asks for the next: a fact it was handling when it stopped comes again.
      message.ack();
      if (options.signal?.aborted) break;
    }
  } finally {
    options.signal?.removeEventListener('abort', stop);
    messages.stop();
  }
}
