import type { NatsConnection } from '@nats-io/nats-core';
import { connectNats, identityFromEnv } from '../adapters/nats/connect.js';
import { loadOperatorKey } from '../adapters/operator-keys.js';
import type { MeshConfig } from '../config.js';
import { personInbox } from '../domain/bus/users.js';

// Every CLI verb reaches the bus as the operator whose key signs its commands: the server knows the
// operator's public key from the log, and grants it the mesh's verbs and reading the log, nothing
// more. MESH_BUS_KEY, when set, speaks instead (connect.ts).

export const connectAsOperator = async (config: Pick<MeshConfig, 'natsUrl' | 'operatorKeyFile'>, name: string, options: { persistent?: boolean } = {}): Promise<NatsConnection> => {
  if (identityFromEnv()) return connectNats(config.natsUrl, { name, ...options });
  const key = loadOperatorKey(config.operatorKeyFile);
  return connectNats(config.natsUrl, { name, ...options, identity: { key, inbox: personInbox(key.operator) } });
};
