import { hostname } from 'node:os';
import { readFileSync } from 'node:fs';
import { pino } from 'pino';
import { writeFileIfChanged } from '../agent/atomic-write.js';
import { consumerSecretsFolderBeside } from '../domain/declarations/compose.js';
import { credentialTag, inUsePath, tagLines } from '../domain/secrets/credential-tag.js';
import { UnavailableError, ValidationError } from '../errors.js';
import { initCluster, runServer } from '../modules/postgres/cluster.js';
import { parsePgpass, signOnce } from '../modules/postgres/guestbook.js';
import { ensureConsumerLogins, readConsumerCredentials, superuserAdmin, writeInForce } from '../modules/postgres/logins.js';
import { durationFlag } from './flags.js';

// `mesh postgres …`: the programs the mesh's PostgreSQL modules run on their nodes (the provider's
// prepare step, its server and its ensure step; a consumer that signs a guestbook), each in the
// foreground for its agent to supervise, logging JSON lines on stdout. None of them reads the bus.

const EVERY_MAX = { ms: 3_600_000, written: '1h', why: 'a pass at least every hour' } as const;

const portFlag = (value: string): number => {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new ValidationError(`--port "${value}" is not a port (1 to 65535)`, { field: '--port', value });
  return port;
};


const untilStopped = (): { stopped: () => boolean; sleep: (ms: number) => Promise<void> } => {
  let stopped = false;
  let wake: (() => void) | undefined;
  const stop = () => {
    stopped = true;
    wake?.();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  return {
    stopped: () => stopped,
    sleep: (ms) =>
      new Promise((resolve) => {
        const timer = setTimeout(resolve, ms);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      }),
  };
};

export const postgresLogins = async (values: { host: string; port: string; superuserFile: string; consumers?: string; every: string; once?: true }): Promise<number> => {
  const logger = pino({ base: { component: 'postgres-logins' } });
  const every = durationFlag('--every', values.every, EVERY_MAX);
  const folder = values.consumers ?? consumersFolderOf(values.superuserFile);
  const port = portFlag(values.port);
  const loop = untilStopped();
  let lastError = '';
  while (!loop.stopped()) {
    try {
      // Read every pass: a rotation places a second credential, a retirement takes one away.
      const admin = superuserAdmin({ host: values.host, port, password: readFileSync(values.superuserFile, 'utf8').trim() });
      const wanted = readConsumerCredentials(folder);
      const { changes, inForce } = await ensureConsumerLogins(admin, wanted);
      writeInForce(folder, wanted, inForce);
      for (const change of changes) logger.info({ folder }, change);
      if (lastError) logger.info('the server answers again');
      lastError = '';
    } catch (error) {
      const why = (error as Error).message;
      if (values.once) throw new UnavailableError(`PostgreSQL at ${values.host}:${port} did not take the logins: ${why}`, { host: values.host, port });
      if (why !== lastError) logger.warn({ err: why }, 'could not ensure the consumers\' logins; trying again');
      lastError = why;
    }
    if (values.once) return 0;
    await loop.sleep(every);
  }
  return 0;
};

const consumersFolderOf = (superuserFile: string): string => consumerSecretsFolderBeside(superuserFile);

export const postgresSign = async (values: { pgpass: string; every: string; patience: string }): Promise<number> => {
  const logger = pino({ base: { component: 'guestbook' } });
  const every = durationFlag('--every', values.every, EVERY_MAX);
  const patience = durationFlag('--patience', values.patience, EVERY_MAX);
  const loop = untilStopped();
  let failingSince: number | undefined;
  let lastError = '';
  while (!loop.stopped()) {
    try {
      // Read every time: the login may have been given a new credential.
      const text = readFileSync(values.pgpass, 'utf8');
      const login = parsePgpass(text, values.pgpass);
      const count = await signOnce(login, `${hostname()}/${process.pid}`);
      // It works with this login: say so beside the file, which is when its node calls the module running.
      writeFileIfChanged(inUsePath(values.pgpass), tagLines([credentialTag(text)]), 0o600);
      logger.info({ database: login.database, user: login.user, count }, 'signed the guestbook');
      failingSince = undefined;
      lastError = '';
    } catch (error) {
      // Its login not made yet, its credential not placed yet, the server starting: patience. Past
      // it, exit, and let the agent say so (a crash loop, never a healthy module).
      const why = (error as Error).message;
      failingSince ??= Date.now();
      if (Date.now() - failingSince > patience) throw new UnavailableError(`could not sign the guestbook for ${Math.round((Date.now() - failingSince) / 1000)} s: ${why}`, { pgpass: values.pgpass });
      if (why !== lastError) logger.warn({ err: why }, 'could not sign the guestbook; trying again');
      lastError = why;
      await loop.sleep(1_000);
      continue;
    }
    await loop.sleep(every);
  }
  return 0;
};

export const postgresInit = async (values: { data: string; superuserFile: string }): Promise<number> => {
  const logger = pino({ base: { component: 'postgres-init' } });
  const { made } = initCluster(values);
  logger.info({ data: values.data }, made ? 'made a PostgreSQL 15 cluster' : 'the data directory holds a cluster already; left as it is');
  return 0;
};

export const postgresServer = async (values: { data: string; host: string; port: string }): Promise<number> => runServer({ data: values.data, host: values.host, port: portFlag(values.port) });
