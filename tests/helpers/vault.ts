import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/nats-core';
import { pino } from 'pino';
import { newIdentity, type Identity } from '../../src/adapters/identity.js';
import { newKeyPair } from '../../src/adapters/sealing.js';
import { fetchSecret } from '../../src/adapters/vault-client.js';
import { meshHome } from '../../src/config.js';
import type { Recipient } from '../../src/domain/secrets/vault-wire.js';
import { VaultStore } from '../../src/vault/store.js';
import { Vault } from '../../src/vault/vault.js';
import { uniqueName } from './names.js';

// A vault of a test's own — its data in a folder of the test's, its tools under the test's prefix —
// and nodes with the two keys an enrolled node has (host key: signs; box key: opens).

export interface TestNode {
  name: string;
  host: Identity;
  sealing: { publicKey: string; secretKey: string };
  recipient: Recipient;
}

export const testNode = (name: string): TestNode => {
  const host = newIdentity();
  const sealing = newKeyPair();
  return { name, host, sealing, recipient: { node: name, signingKey: host.publicKey, sealingKey: sealing.publicKey } };
};

export const openTestVault = (nc: NatsConnection, options: { prefix: string; controllerKey: string; dataDir?: string; identity?: Pick<Identity, 'secretKey'> }) => {
  const dataDir = options.dataDir ?? join(meshHome(), 'tmp', uniqueName('vault-'));
  mkdirSync(dataDir, { recursive: true });
  const vault = new Vault(nc, { prefix: options.prefix, controllerKey: options.controllerKey, store: new VaultStore({ dataDir }), ...(options.identity ? { identity: options.identity } : {}), logger: pino({ level: 'silent' }) });
  vault.start();
  return {
    dataDir,
    vault,
    stop: () => vault.stop(),
    remove: () => {
      vault.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
};

/** `node` asking the vault for `secret`, as its agent does. */
export const fetchAs = (nc: NatsConnection, prefix: string, node: TestNode, secret: string, version?: number) =>
  fetchSecret(nc, { prefix, node: node.name, secret, ...(version === undefined ? {} : { version }), hostKey: node.host, sealingSecretKey: node.sealing.secretKey, timeoutMs: 3_000 });

/** What a consumer of the fixture provider `logins` requires: its login (a per-consumer secret) and a token of its own (a plain secret). */
export const LOGIN_AND_TOKEN = [
  { name: 'db', contract: 'test-login', provider: 'module' },
  { name: 'token', contract: 'secret', provider: 'module', seat: 'mesh-vault' },
] as const;
