import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { UnavailableError } from '../../errors.js';

export interface ConnectOptions {
  name: string;
  /** Keep reconnecting for ever (long-running components) or fail fast (one-shot CLI verbs). */
  persistent?: boolean;
  user?: string;
  pass?: string;
}

export const connectNats = async (url: string, options: ConnectOptions): Promise<NatsConnection> => {
  try {
    return await connect({
      servers: url,
      name: options.name,
      maxReconnectAttempts: options.persistent ? -1 : 10,
      reconnectTimeWait: 250,
      waitOnFirstConnect: false,
      timeout: 3_000,
      ...(options.user ? { user: options.user, pass: options.pass ?? '' } : {}),
    });
  } catch (cause) {
    throw new UnavailableError(`cannot reach NATS at ${url}: ${(cause as Error).message}. Is the stack up? Run \`npx mesh dev up\`, or set MESH_NATS_URL.`, {
      url,
    }, { cause });
  }
};
