import { existsSync, readFileSync, watch, type FSWatcher } from 'node:fs';
import { dirname } from 'node:path';
import type { Server } from 'node:http';
import type { NatsConnection } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import { identityFromSeed } from '../../adapters/identity.js';
import { fromBase64 } from '../../adapters/key-files.js';
import { connectNats } from '../../adapters/nats/connect.js';
import type { ModuleBusIdentity } from '../../domain/bus/module-identity.js';
import { providerAnswerSubject } from '../../domain/bus/users.js';
import { z } from 'zod';
import type { Ask } from '../../domain/routes/grants.js';
import type { RoutesFile } from '../../domain/routes/table.js';
import { UnavailableError } from '../../errors.js';
import { HandBack, type HandBackAnswer } from './hand-back.js';
import { proxyServer } from './http.js';
import { readRoutesFile } from './routes-file.js';

// `mesh proxy serve`, put together: the holder of mesh-proxy on its node. It reads the routes file
// the mesh writes there (watched, and read again every second in case a change is missed), hands
// back the names it lists as asked — as its own module on the bus, on its own answer subject,
// which the server lets no one else publish to — and serves HTTP from it. Serving does not wait
// for the bus: a proxy whose bus is away still routes what it was told.

export interface ProxyOptions {
  natsUrl: string;
  prefix: string;
  /** the module's bus identity, as its node placed it (`${bus.credential}`) */
  identity: ModuleBusIdentity;
  routesFile: string;
  host: string;
  port: number;
  logger: Logger;
  /** how often the file is read again besides its watch */
  pollMs?: number;
}

export interface RunningProxy {
  /** where it listens (the port given, or the one the system chose for 0) */
  port: number;
  stop(): Promise<void>;
}

/** The controller's answer on the answer-consumer subject (a ToolAnswer), read for what the proxy needs of it. */
const toolAnswerSchema = z.union([
  z.looseObject({ ok: z.literal(true), summary: z.string() }),
  z.looseObject({ ok: z.literal(false), refused: z.array(z.looseObject({ what: z.string(), why: z.string(), remedy: z.string() })) }),
]);

const readSecret = (file: string): string | undefined => {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
};

const listen = (server: Server, host: string, port: number): Promise<number> =>
  new Promise((resolve, reject) => {
    server.once('error', (error) => reject(new UnavailableError(`the proxy cannot listen on ${host}:${port}: ${error.message}`, { host, port })));
    server.listen(port, host, () => {
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : port);
    });
  });

export const runProxy = async (options: ProxyOptions): Promise<RunningProxy> => {
  const { logger, identity } = options;
  const subject = providerAnswerSubject(options.prefix, identity.node, identity.module);
  let nc: NatsConnection | undefined;
  let stopped = false;

  const send = async (ask: Ask): Promise<HandBackAnswer> => {
    if (!nc) throw new Error('not connected to the bus yet');
    const body = { consumer: { node: ask.node, module: ask.module }, requirement: `route:${ask.name}`, values: { publicName: ask.publicName } };
    const reply = toolAnswerSchema.parse((await nc.request(subject, JSON.stringify(body), { timeout: 10_000 })).json());
    return reply.ok ? { ok: true, summary: reply.summary } : { ok: false, refused: reply.refused };
  };
  const handBack = new HandBack(send, logger);

  let current: { file: RoutesFile } | { why: string } = { why: `${options.routesFile} has not been read yet` };
  let lastText: string | undefined;
  const read = (): void => {
    const found = readRoutesFile(options.routesFile);
    const text = found.ok ? found.text : found.why;
    if (text === lastText) return;
    lastText = text;
    // A file that is gone or does not read serves nothing: the proxy fails closed, never on an old table.
    current = found.ok ? { file: found.file } : { why: found.why };
    if (found.ok) {
      logger.info({ routes: options.routesFile, entries: found.file.entries.length, asked: found.file.asked.length }, 'read the routes file');
      handBack.asked(found.file.asked);
    } else {
      logger.warn({ routes: options.routesFile }, `serving nothing: ${found.why}`);
      handBack.asked([]);
    }
  };

  const server = proxyServer({ routes: () => current, readSecret, logger });
  read();
  const port = await listen(server, options.host, options.port);
  logger.info({ host: options.host, port, routes: options.routesFile, answers: subject }, 'proxy serving');

  // The agent writes the file by renaming a new one over it: watch the folder, and read on a timer too.
  let watcher: FSWatcher | undefined;
  const watchFolder = (): void => {
    if (watcher || !existsSync(dirname(options.routesFile))) return;
    try {
      watcher = watch(dirname(options.routesFile), () => read());
      watcher.on('error', () => {
        watcher?.close();
        watcher = undefined;
      });
    } catch {
      watcher = undefined;
    }
  };
  watchFolder();
  const poll = setInterval(() => {
    watchFolder();
    read();
  }, options.pollMs ?? 1_000);

  // The bus: its identity may not be known to the server yet (the user list is reloaded after the
  // file is placed), so it is tried again, backing off, for as long as the proxy runs.
  let wake: (() => void) | undefined;
  const connecting = (async () => {
    let waitMs = 500;
    while (!stopped) {
      try {
        nc = await connectNats(options.natsUrl, { name: `mesh-proxy ${identity.node}/${identity.module}`, persistent: true, identity: { key: identityFromSeed(fromBase64(identity.seed)), inbox: identity.inbox } });
        logger.info({ nats: options.natsUrl, as: `${identity.node}/${identity.module}` }, 'connected to the bus as its module');
        handBack.again();
        return;
      } catch (error) {
        logger.warn({ nats: options.natsUrl, err: (error as Error).message, retryInMs: waitMs }, 'the bus did not take the proxy yet');
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, waitMs);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        waitMs = Math.min(30_000, waitMs * 2);
      }
    }
  })();

  return {
    port,
    stop: async () => {
      stopped = true;
      wake?.();
      clearInterval(poll);
      watcher?.close();
      handBack.stop();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
      await connecting;
      await nc?.drain().catch(() => undefined);
    },
  };
};
