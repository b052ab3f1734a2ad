import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { UnavailableError } from '../../errors.js';
import { busAuthenticator, loadIdentityFile, type KeyPairFile } from '../identity.js';

// Every connection to the bus is made as an identity: the server knows its public half as an nkey
// and checks a signature over its nonce (docs/decisions.md, "Bus identities"). A connection also
// names its inbox prefix, the only one its user may subscribe to.

export interface BusIdentity {
  key: Pick<KeyPairFile, 'secretKey'>;
  /** `_INBOX.person.ada`, `_INBOX.host.alpha`, … as composed for this identity */
  inbox: string;
}

export interface ConnectOptions {
  name: string;
  /** Keep reconnecting for ever (long-running components) or fail fast (one-shot CLI verbs). */
  persistent?: boolean;
  /** who this connection is; MESH_BUS_KEY, when set, speaks for every connection of the process */
  identity?: BusIdentity;
}

/**
 * MESH_BUS_KEY names a key file this process speaks as, whatever its role would choose: a tool
 * or a test with a principal of its own (the server's administrator lists it, docs/decisions.md).
 * MESH_BUS_INBOX is that principal's inbox prefix.
 */
export const identityFromEnv = (env: NodeJS.ProcessEnv = process.env): BusIdentity | undefined => {
  const file = env.MESH_BUS_KEY;
  if (!file) return undefined;
  return { key: loadIdentityFile(file, 'MESH_BUS_KEY names it'), inbox: env.MESH_BUS_INBOX ?? '_INBOX.admin' };
};

export const connectNats = async (url: string, options: ConnectOptions): Promise<NatsConnection> => {
  const identity = identityFromEnv() ?? options.identity;
  try {
    return await connect({
      servers: url,
      name: options.name,
      maxReconnectAttempts: options.persistent ? -1 : 10,
      reconnectTimeWait: 250,
      waitOnFirstConnect: false,
      timeout: 3_000,
      ...(identity ? { authenticator: busAuthenticator(identity.key), inboxPrefix: identity.inbox } : {}),
    });
  } catch (cause) {
    const refused = /authorization/i.test((cause as Error).message);
    throw new UnavailableError(
      refused
        ? `NATS at ${url} refused ${options.name}'s identity: ${(cause as Error).message}. The bus knows only identities the mesh composed (an enrolled node, an operator, the controller); check the key this process uses.`
        : `cannot reach NATS at ${url}: ${(cause as Error).message}. Is the stack up? Run \`npx mesh dev up\`, or set MESH_NATS_URL.`,
      { url },
      { cause },
    );
  }
};
