import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { UnavailableError, ValidationError } from '../../errors.js';
import { existsSync, readFileSync } from 'node:fs';
import { z } from 'zod';
import { busAuthenticator, identityFromSeed, loadIdentityFile, type KeyPairFile } from '../identity.js';
import { fromBase64 } from '../key-files.js';
import { coalesceWrites } from './coalesced-writes.js';

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
 * MESH_BUS_KEY names a key file (or a module's placed identity file) this process speaks as, whatever its role would choose: a tool
 * or a test with a principal of its own (the server's administrator lists it, docs/decisions.md).
 * MESH_BUS_INBOX is that principal's inbox prefix.
 */
export const identityFromEnv = (env: NodeJS.ProcessEnv = process.env): BusIdentity | undefined => {
  const file = env.MESH_BUS_KEY;
  if (!file) return undefined;
  // A module's identity file, as its node places it (`${bus.credential}`), names its own seed and inbox.
  const placed = existsSync(file) ? moduleIdentityFile.safeParse(JSON.parse(readFileSync(file, 'utf8'))) : undefined;
  if (placed?.success) return { key: identityFromSeed(fromBase64(placed.data.seed)), inbox: env.MESH_BUS_INBOX ?? placed.data.inbox };
  return { key: loadIdentityFile(file, 'MESH_BUS_KEY names it'), inbox: env.MESH_BUS_INBOX ?? '_INBOX.admin' };
};

const moduleIdentityFile = z.object({ seed: z.string().regex(/^[A-Za-z0-9+/]{43}=$/), inbox: z.string().min(1) });

/**
 * How long a first handshake may take. 3 s by default, so a CLI facing a server that is away says
 * so quickly; MESH_NATS_CONNECT_TIMEOUT_MS gives more where the machine is known to be busy (the
 * test suite on two cores beside its own servers).
 */
export const connectTimeoutMs = (env: NodeJS.ProcessEnv = process.env): number => {
  const given = env.MESH_NATS_CONNECT_TIMEOUT_MS;
  if (given === undefined || given === '') return 3_000;
  const ms = Number(given);
  if (!Number.isInteger(ms) || ms < 100 || ms > 120_000) throw new ValidationError(`MESH_NATS_CONNECT_TIMEOUT_MS=${given}: give whole milliseconds from 100 to 120000`, { field: 'MESH_NATS_CONNECT_TIMEOUT_MS' });
  return ms;
};

export const connectNats = async (url: string, options: ConnectOptions): Promise<NatsConnection> => {
  const identity = identityFromEnv() ?? options.identity;
  try {
    const nc = await connect({
      // A cluster's address is every member's, comma-separated: the client tries the next when one is away.
      servers: url.split(','),
      name: options.name,
      maxReconnectAttempts: options.persistent ? -1 : 10,
      reconnectTimeWait: 250,
      waitOnFirstConnect: false,
      timeout: connectTimeoutMs(),
      // Each request would otherwise capture a stack up front in case it fails (an Error built per
      // publish and per acknowledgement): a few per cent of a busy writer's time, for traces it never reads.
      noAsyncTraces: options.persistent === true,
      ...(identity ? { authenticator: busAuthenticator(identity.key), inboxPrefix: identity.inbox } : {}),
    });
    coalesceWrites(nc);
    return nc;
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
