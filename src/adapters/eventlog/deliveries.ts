// A reader of the log tells catching up from live by the server's count of what is stored after
// each message it delivers (`info.pending`), and batches or holds back commits while it says more
// follows. The count is only a hint: a nats-server 2.9 filtered consumer has been seen to deliver
// the newest message of the stream with a pending of 1, and after PostgreSQL came back a log was
// seen whose counts stayed at 2–3 after its last message. A reader that trusted it held the last
// commits until the log moved again — and a projection stayed behind, "serving", for minutes. So
// what was delivered is let go on idle, never on the count: when nothing comes for `quietMs` after
// a delivery that said more would follow, the reader is told it is idle, and decides and applies
// everything it holds, whatever the server says. The server is asked only about the opposite
// failure: a consumer that delivers nothing while the server holds more (seen as a projection that
// stopped at one sequence while the log grew) is not waited on for ever: the reader is told it
// stalled, and starts a consumer again.

import type { JetStreamManager } from '@nats-io/jetstream';

/**
 * The client's own queue of what the server already delivered: how many messages it has handed on
 * (a nats.js consumer's `getProcessed`). Its `getPending` is not used: it counts the consumer's
 * own pull requests queued beside the messages.
 */
export interface LocalQueue {
  getProcessed(): number;
}

/** What a reader takes from its consumer: the next message, or word that nothing followed the last one for a while (let go of what is held). */
export type Delivery<M> = { kind: 'message'; message: M; pending: number } | { kind: 'idle'; seq: number };

interface Consumed {
  seq: number;
  info: { pending: number };
}

/** How long a reader waits: for the message a delivery promised, before it is told it is idle; while idle, between looks at the server; and how long the server may hold more than was delivered before the consumer counts as stalled. */
export interface DeliveryPatience {
  quietMs: number;
  idleMs: number;
  stalledMs: number;
}

export const DEFAULT_PATIENCE: DeliveryPatience = { quietMs: 200, idleMs: 5_000, stalledMs: 30_000 };

/** The consumer delivers nothing while the server holds more: the reader starts again rather than go quiet. */
export class ConsumerStalledError extends Error {
  constructor(
    readonly deliveredTo: number,
    readonly storedTo: number,
    stalledMs: number,
  ) {
    super(`the log's consumer delivered nothing after seq ${deliveredTo} for ${Math.round(stalledMs / 1000)} s while the log holds up to seq ${storedTo}; reading again from there`);
    this.name = 'ConsumerStalledError';
  }
}

const QUIET = Symbol('quiet');
const WAITING = Symbol('waiting');
const NOT_YET: Promise<typeof WAITING> = Promise.resolve(WAITING);

/**
 * The messages of a consumer, in order, and an `idle` after a message that claimed more would
 * follow when nothing followed for `quietMs` — whatever the server's count said, and without
 * asking it. While nothing comes, the server is asked every `idleMs` what it holds last
 * (`lastStoredSeq`, the newest sequence under the consumer's filter); when it has held more than
 * was delivered for `stalledMs`, the consumer is stalled and this throws `ConsumerStalledError`,
 * so the reader starts a consumer again from where it is instead of going quiet.
 */
export async function* deliveriesOf<M extends Consumed>(
  messages: AsyncIterable<M>,
  lastStoredSeq: () => Promise<number>,
  patience: DeliveryPatience = DEFAULT_PATIENCE,
  localQueue?: LocalQueue,
): AsyncGenerator<Delivery<M>> {
  const iterator = messages[Symbol.asyncIterator]();
  let next = iterator.next();
  // the sequence of the last message delivered with a pending count above 0, until one follows it or the reader is told it is idle
  let promised: number | undefined;
  let delivered = 0;
  // since when the server has held more than was delivered, while nothing came
  let behindSince: number | undefined;
  for (;;) {
    // A message already there is taken without a timer: catching up costs no clock per message.
    let result: IteratorResult<M> | typeof QUIET | typeof WAITING = await Promise.race([next, NOT_YET]);
    if (result === WAITING) {
      let timer: NodeJS.Timeout | undefined;
      const quiet = new Promise<typeof QUIET>((resolve) => {
        timer = setTimeout(() => resolve(QUIET), promised === undefined ? patience.idleMs : patience.quietMs);
      });
      result = await Promise.race([next, quiet]);
      clearTimeout(timer);
    }
    if (result === QUIET) {
      if (promised !== undefined) {
        // Flush on idle: what was delivered is applied whatever the count promised.
        yield { kind: 'idle', seq: promised };
        promised = undefined;
        continue;
      }
      // Unanswered (the server away): not sure either way, so wait on, and ask again.
      const last = await lastStoredSeq().catch(() => undefined);
      if (last === undefined) continue;
      if (last > delivered) {
        behindSince ??= Date.now();
        if (Date.now() - behindSince >= patience.stalledMs) throw new ConsumerStalledError(delivered, last, Date.now() - behindSince);
      } else {
        behindSince = undefined;
      }
      continue;
    }
    if (result.done) return;
    const handedOnBefore = localQueue?.getProcessed() ?? 0;
    next = iterator.next();
    // Live, the server counts 0 after every message it sends at once; but while the reader was busy
    // (writing the last batch) more arrived and wait in the client's queue. One of them following
    // keeps a batch open instead of costing a transaction each; the queue hands it over as `next()`
    // is called, so the queue's own counter says whether one was there.
    const waitingHere = localQueue ? localQueue.getProcessed() - handedOnBefore : 0;
    const pending = Math.max(result.value.info.pending, waitingHere);
    behindSince = undefined;
    delivered = result.value.seq;
    promised = pending > 0 ? result.value.seq : undefined;
    yield { kind: 'message', message: result.value, pending };
  }
}

/** The newest sequence stored under `filter` in `stream` (0 when none is). */
export const lastSeqUnder = async (jsm: JetStreamManager, stream: string, filter: string): Promise<number> => {
  const last = await jsm.streams.getMessage(stream, { last_by_subj: filter });
  return last?.seq ?? 0;
};
