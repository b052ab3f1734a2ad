import type { NatsConnection } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import { DECLARATION_SIGNATURE_HEADER } from '../adapters/declaration-signature.js';
import { pause, unlessAborted } from './pause.js';
import { backoff } from './settings.js';

// The node's own declaration and nothing else. NODES keeps one message per subject, so "what must
// this node run" is always the newest message on its subject, read by subject with a direct get
// (`$JS.API.DIRECT.GET.<NODES>.<subject>`) — the one read of NODES the host's bus user is granted,
// for its own subject alone. A core subscription on the subject only wakes the feed; the get is
// what is delivered, one at a time, so the node sees declarations in stream order and never one
// the stream has already replaced. It looks again on every reconnect and every `resyncMs`. A read
// under way when the connection drops may never be answered: a reconnect stops waiting for it (and
// ends a wait before a retry) and reads again at once, rather than leaving the node on an old
// declaration for the request's timeout and a backoff while it is connected again.
//
// What is delivered is the stored message as it is — its bytes and its signature header — for the
// agent to verify before it reads a byte of it (declaration-signature.ts): NODES also takes what
// anyone aims at the subject.

/** One message of the node's subject, as NODES stored it. */
export interface DeclarationMessage {
  /** its sequence in NODES: each is delivered once */
  streamSeq: number;
  data: Uint8Array;
  /** the controller's signature header, when it carries one */
  signature: string | undefined;
}

export const directGetSubject = (stream: string, subject: string): string => `$JS.API.DIRECT.GET.${stream}.${subject}`;

export const followDeclarations = async (
  nc: NatsConnection,
  where: { stream: string; subject: string },
  deliver: (message: DeclarationMessage) => void,
  signal: AbortSignal,
  logger: Logger,
  resyncMs = 30_000,
): Promise<void> => {
  let delivered = 0;
  let wanted = true;
  let attempts = 0;
  let wake: () => void = () => undefined;
  let reconnected = new AbortController();
  const ask = (): void => {
    wanted = true;
    wake();
  };
  const subscription = nc.subscribe(where.subject, { callback: ask });
  const resync = setInterval(ask, resyncMs);
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type !== 'reconnect') continue;
      reconnected.abort();
      ask();
    }
  })().catch(() => undefined);
  const stop = (): void => wake();
  signal.addEventListener('abort', stop, { once: true });
  try {
    while (!signal.aborted) {
      if (!wanted) {
        await new Promise<void>((resolve) => (wake = resolve));
        continue;
      }
      wanted = false;
      if (reconnected.signal.aborted) reconnected = new AbortController();
      const relinked = reconnected.signal;
      try {
        const reply = await unlessAborted(nc.request(directGetSubject(where.stream, where.subject), new Uint8Array(0), { timeout: 5_000 }), relinked, () => new Error('reconnected while reading'));
        attempts = 0;
        const status = reply.headers?.code ?? 0;
        if (status === 404) continue; // nothing declared for this node yet
        if (status >= 400) throw new Error(`${where.stream} answered ${status} ${reply.headers?.description ?? ''}`.trim());
        const seq = Number(reply.headers?.get('Nats-Sequence'));
        if (!Number.isInteger(seq) || seq <= delivered) continue;
        delivered = seq;
        deliver({ streamSeq: seq, data: reply.data, signature: reply.headers?.get(DECLARATION_SIGNATURE_HEADER) || undefined });
      } catch (error) {
        wanted = true;
        if (relinked.aborted) continue; // read again at once, over the new connection
        logger.warn({ stream: where.stream, err: (error as Error).message }, 'cannot read the declaration subject; trying again');
        await pause(backoff(++attempts, 500, 10_000), AbortSignal.any([signal, reconnected.signal]));
      }
    }
  } finally {
    signal.removeEventListener('abort', stop);
    clearInterval(resync);
    subscription.unsubscribe();
  }
};
