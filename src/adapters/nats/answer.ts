import type { Msg } from '@nats-io/nats-core';

// Who asked is whoever may read the reply subject, and the asker chooses that subject: a request
// whose reply is `mesh.log.…` or `mesh.node.beta.declare` would have the answer published there —
// by the controller, whose user may write the log and every declaration, or by a module whose
// `allow_responses` lets it answer any reply subject once — and a stream would capture it. Every
// identity's inbox is under `_INBOX.` (users.ts), and no stream captures `_INBOX.>`; so a request is
// answered only on a reply subject there, and any other is dropped unanswered.

export const INBOX_ROOT = '_INBOX.';

/** Whether `reply` is an inbox, the only kind of subject the mesh answers on. */
export const isInboxReply = (reply: string | undefined): reply is string => typeof reply === 'string' && reply.startsWith(INBOX_ROOT) && reply.length > INBOX_ROOT.length;

/**
 * Answers `message` on its reply subject when that is an inbox; else answers nothing and returns
 * false, telling `refused` (a log line) which subject it would have been published on.
 */
export const answerToInbox = (message: Msg, body: string | Uint8Array, refused?: (reply: string) => void): boolean => {
  if (!isInboxReply(message.reply)) {
    if (message.reply) refused?.(message.reply);
    return false;
  }
  return message.respond(body);
};
