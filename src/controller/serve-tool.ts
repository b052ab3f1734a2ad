import type { NatsConnection, Subscription } from '@nats-io/nats-core';

// How every mesh-controller tool is served: core request/reply in one queue group, so with several
// controllers each call is answered once; the answer is JSON. A request is never persisted.

export const CONTROLLER_QUEUE = 'mesh-controller';

export const serveTool = (nc: NatsConnection, subject: string, answer: (payload: Uint8Array) => Promise<unknown>): Subscription =>
  nc.subscribe(subject, {
    queue: CONTROLLER_QUEUE,
    callback: (error, message) => {
      if (error) return;
      void answer(message.data).then((reply) => message.respond(JSON.stringify(reply)));
    },
  });
