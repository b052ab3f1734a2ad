import { DeliverPolicy, type JetStreamClient } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import { pause } from './pause.js';
import { backoff } from './settings.js';

// The node's own declaration subject and nothing else: an ordered consumer filtered to it, from
// the newest message on it. NODES keeps one message per subject, so on every (re)connect the agent
// gets exactly the newest declaration. The consumer recreates itself across short outages; when
// it gives up (a long outage, the stream not there yet) the feed makes a new one, for ever.

export const followDeclarations = async (
  js: JetStreamClient,
  where: { stream: string; subject: string },
  deliver: (payload: unknown) => void,
  signal: AbortSignal,
  logger: Logger,
): Promise<void> => {
  let attempts = 0;
  while (!signal.aborted) {
    try {
      const consumer = await js.consumers.get(where.stream, { filter_subjects: where.subject, deliver_policy: DeliverPolicy.LastPerSubject });
      const messages = await consumer.consume({ max_messages: 4 });
      const stop = (): void => void messages.stop();
      signal.addEventListener('abort', stop, { once: true });
      try {
        for await (const message of messages) {
          attempts = 0;
          let payload: unknown;
          try {
            payload = message.json();
          } catch {
            payload = undefined;
          }
          deliver(payload);
        }
      } finally {
        signal.removeEventListener('abort', stop);
      }
    } catch (error) {
      logger.warn({ stream: where.stream, err: (error as Error).message }, 'cannot follow the declaration subject; trying again');
    }
    if (!signal.aborted) await pause(backoff(++attempts, 500, 10_000), signal);
  }
};
