import type { NatsConnection, Subscription } from '@nats-io/nats-core';
import { answerToInbox, isInboxReply } from '../adapters/nats/answer.js';

// How every mesh-controller tool is served: core request/reply in one queue group, so with several
// controllers each call is answered once; the answer is JSON. A request is never persisted. The
// answer is handed the request's reply subject too: the inbox it names is whose the answer is
// (speaker.ts speakerOfReply).

export const CONTROLLER_QUEUE = 'mesh-controller';
/** the writer's own subjects: while a lease changes hands two may serve them for a moment, and a call is still answered once */
export const WRITER_QUEUE = 'mesh-controller-writer';

export const serveTool = (nc: NatsConnection, subject: string, answer: (payload: Uint8Array, reply: string | undefined) => Promise<unknown>, queue = CONTROLLER_QUEUE): Subscription =>
  nc.subscribe(subject, {
    queue,
    callback: (error, message) => {
      if (error) return;
      // A request whose answer would go anywhere but an inbox is not even decided (answer.ts): the
      // controller's user may publish on the log's and the declarations' subjects.
      if (!isInboxReply(message.reply)) return;
      // An answer already encoded (one passed on from the writer, as it came) is sent as it is.
      void answer(message.data, message.reply).then((reply) => answerToInbox(message, reply instanceof Uint8Array ? reply : JSON.stringify(reply)));
    },
  });
