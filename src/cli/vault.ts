import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { JetStreamEventLog } from '../adapters/eventlog/jetstream-log.js';
import { loadIdentityFile } from '../adapters/identity.js';
import { connectNats, identityFromEnv } from '../adapters/nats/connect.js';
import { loadConfig, meshHome } from '../config.js';
import { meshEventRegistry } from '../domain/registry.js';
import { UnavailableError, ValidationError } from '../errors.js';
import { VaultStore } from '../vault/store.js';
import { Vault } from '../vault/vault.js';

// `mesh vault`: the holder of mesh-vault, in the foreground (the vault module runs it on its node).
// It speaks on the bus as that module's identity (MESH_BUS_KEY: the file its node places), keeps
// its secrets in --data, and takes `make` only from the controller whose key the log began with.

const ED25519_PUBLIC_KEY = /^[A-Za-z0-9+/]{43}=$/;


export const vaultCommand = async (values: { data?: string; keyFile?: string; controllerKey?: string }): Promise<number> => {
  const config = loadConfig();
  const identity = identityFromEnv();
  if (!identity) {
    throw new ValidationError("mesh vault speaks on the bus as the vault module assigned to its node: set MESH_BUS_KEY to that module's identity file", { field: 'MESH_BUS_KEY' });
  }
  const logger = pino({ base: { component: 'vault', mesh: config.meshName } });
  const keyFile = values.keyFile ?? process.env.MESH_VAULT_KEY_FILE;
  const store = new VaultStore({ dataDir: values.data ?? join(meshHome(), 'vault'), ...(keyFile ? { keyFile } : {}) });
  const nc = await connectNats(config.natsUrl, { name: 'mesh-vault', persistent: true });
  const controllerKey = await controllerKeyOf(values.controllerKey, () => new JetStreamEventLog(nc, { stream: config.logStream, subjectPrefix: config.logSubjectPrefix, registry: meshEventRegistry() }).writerKey());
  const vault = new Vault(nc, { prefix: config.subjectPrefix, controllerKey, store, identity: identity.key, logger });
  vault.start();
  logger.info({ nats: config.natsUrl, secrets: store.size() }, 'vault started');
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  vault.stop();
  await nc.drain();
  return 0;
};

/** The flag (a public key or a key file), else the key the log's first commit names. */
const controllerKeyOf = async (flag: string | undefined, fromLog: () => Promise<string | undefined>): Promise<string> => {
  if (flag !== undefined) {
    if (ED25519_PUBLIC_KEY.test(flag)) return flag;
    if (!existsSync(flag)) throw new ValidationError(`--controller-key "${flag}" is neither an ed25519 public key (base64) nor a key file`, { field: '--controller-key' });
    return loadIdentityFile(flag).publicKey;
  }
  const key = await fromLog();
  if (!key) throw new UnavailableError('the log names no controller key yet (it has not begun): start the controller first, or pass --controller-key', {});
  return key;
};
