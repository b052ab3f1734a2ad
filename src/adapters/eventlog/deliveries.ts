// A reader of the log tells catching up from live by the server's count of what is stored after
// each message it delivers (`info.pending`): a commit held back for a later signature, or a batch
// kept open for the next commit, is let go when that count is 0. The count can be wrong: a
// nats-server 2.9 filtered consumer has been seen to deliver the newest message of the stream
// with a pending of 1, when another message was stored while it was delivering. Trusting it, a
// reader would hold the last commit until the log moved again — and a log held at a bad commit
// does not move, so a projection stayed "stalled" after the void that freed it. So a delivery
// that says more is coming is not taken on its word: when nothing comes for a while, the
// server is asked what it holds last under the reader's filter, and if that is what was just
// delivered, the reader is told it is at the head.

import type { JetStreamManager } from '@nats-io/jetstream';

/** What a reader takes from its consumer: the next message, or word that the last one was the head after all. */
export type Delivery<M> = { kind: 'message'; message: M; pending: number } | { kind: 'at-head'; seq: number };

interface Consumed {
  seq: number;
  info: { pending: number };
}

/** How long a reader waits for the message a delivery promised before it asks the server. */
export const QUIET_MS = 200;

const QUIET = Symbol('quiet');

/**
 * The messages of a consumer, in order, and an `at-head` after a message that claimed more would
 * follow when nothing followed for `quietMs` and `lastStoredSeq` (the newest sequence under the
 * consumer's filter) is that message's.
 */
export async function* deliveriesOf<M extends Consumed>(messages: AsyncIterable<M>, lastStoredSeq: () => Promise<number>, quietMs = QUIET_MS): AsyncGenerator<Delivery<M>> {
  const iterator = messages[Symbol.asyncIterator]();
  let next = iterator.next();
  // the sequence of the last message delivered with a pending count above 0, until one follows it
  let promised: number | undefined;
  for (;;) {
    let result: IteratorResult<M> | typeof QUIET;
    if (promised === undefined) {
      result = await next;
    } else {
      let timer: NodeJS.Timeout | undefined;
      const quiet = new Promise<typeof QUIET>((resolve) => {
        timer = setTimeout(() => resolve(QUIET), quietMs);
      });
      result = await Promise.race([next, quiet]);
      clearTimeout(timer);
    }
    if (result === QUIET) {
      // Unanswered (the server away): not sure either way, so wait on, and ask again.
      const last = await lastStoredSeq().catch(() => Number.POSITIVE_INFINITY);
      if (last <= (promised as number)) {
        yield { kind: 'at-head', seq: promised as number };
        promised = undefined;
      }
      continue;
    }
    if (result.done) return;
    next = iterator.next();
    promised = result.value.info.pending > 0 ? result.value.seq : undefined;
    yield { kind: 'message', message: result.value, pending: result.value.info.pending };
  }
}

/** The newest sequence stored under `filter` in `stream` (0 when none is). */
export const lastSeqUnder = async (jsm: JetStreamManager, stream: string, filter: string): Promise<number> => {
  const last = await jsm.streams.getMessage(stream, { last_by_subj: filter });
  return last?.seq ?? 0;
};
