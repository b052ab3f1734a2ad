import type { NatsConnection } from '@nats-io/nats-core';

// nats.js writes its outbound buffer to the socket at the end of the microtask in which the first
// publish of a burst was made. A busy process publishes from many microtasks of one turn of the
// event loop (a command's append, its reply, a node's declaration, a consumer's pull), so each
// becomes a write of its own: at 32 commands in flight the controller made about two socket writes
// per command, and writing was a sixth of its time. Deferring the write to the end of the turn
// (setImmediate) sends what the whole turn published in one write. An idle process waits no
// longer than before to within one turn; a full buffer is still written at once.
//
// The hook is the client's own `flushPending` (nats-core's ProtocolHandler); when a version of the
// client no longer has it, nothing is changed and the connection writes as the client does.

interface ProtocolHandlerInternals {
  flushPending?: () => void;
  close?: (error?: Error) => Promise<void>;
  outbound?: { size(): number };
  pendingLimit?: number;
}

/** Sends what one turn of the event loop published in one socket write. Returns whether the connection was changed. */
export const coalesceWrites = (nc: NatsConnection): boolean => {
  const protocol = (nc as unknown as { protocol?: ProtocolHandlerInternals }).protocol;
  if (!protocol || typeof protocol.flushPending !== 'function' || typeof protocol.close !== 'function') return false;
  const flushNow = protocol.flushPending.bind(protocol);
  const close = protocol.close.bind(protocol);
  let scheduled: NodeJS.Immediate | undefined;
  protocol.flushPending = () => {
    // A buffer past the client's limit is written now, as the client would.
    if (protocol.outbound && protocol.pendingLimit !== undefined && protocol.outbound.size() >= protocol.pendingLimit) return flushNow();
    scheduled ??= setImmediate(() => {
      scheduled = undefined;
      flushNow();
    });
  };
  protocol.close = (error?: Error) => {
    // Nothing published before a close is left unwritten.
    if (scheduled) clearImmediate(scheduled);
    scheduled = undefined;
    flushNow();
    return close(error);
  };
  return true;
};
