import { errors as natsErrors } from '@nats-io/nats-core';

/**
 * Whether a JetStream request failed only for a moment: no answer in time, nobody answering (a
 * server reloading its user list drops requests for a moment), or a cluster saying it is
 * temporarily unavailable (just healed, no meta leader yet). Asked again, it may well succeed.
 */
export const isTransientJetStreamError = (error: unknown): boolean =>
  error instanceof natsErrors.TimeoutError ||
  (error instanceof natsErrors.RequestError && error.isNoResponders()) ||
  /temporarily unavailable|no responders|jetstream is not enabled/i.test((error as Error)?.message ?? '');
