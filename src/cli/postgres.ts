import { hostname } from 'node:os';
import { readFileSync } from 'node:fs';
import { pino } from 'pino';
import type { CommandUnknownOpts } from '@commander-js/extra-typings';
import { writeFileIfChanged } from '../agent/atomic-write.js';
import { consumerSecretsFolderBeside } from '../domain/declarations/compose.js';
import { credentialTag, inUsePath, tagLines } from '../domain/secrets/credential-tag.js';
import { UnavailableError, ValidationError } from '../errors.js';
import { initCluster, runServer } from '../modules/postgres/cluster.js';
import { parsePgpass, signOnce } from '../modules/postgres/guestbook.js';
import { ensureConsumerLogins, readConsumerCredentials, superuserAdmin, writeInForce } from '../modules/postgres/logins.js';
import { durationFlag } from './flags.js';
import { group, run, verb } from './verbs.js';

// `mesh postgres …`: the programs the mesh's PostgreSQL modules run on their nodes (the provider's
// prepare step, its server and its ensure step; a consumer that signs a guestbook), each in the
// foreground for its agent to supervise, logging JSON lines on stdout. None of them reads the bus.

const EVERY_MAX = { ms: 3_600_000, written: '1h', why: 'a pass at least every hour' } as const;

const portFlag = (value: string): number => {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new ValidationError(`--port "${value}" is not a port (1 to 65535)`, { field: '--port', value });
  return port;
};

export const definePostgres = (mesh: CommandUnknownOpts): void => {
  const postgres = group(mesh, 'postgres', "the programs of the mesh's PostgreSQL modules: the provider's cluster and logins, and a consumer");
  verb(postgres, 'init', { summary: "the provider's prepare step: initdb in --data on first run, the superuser's password the secret in --superuser-file; a cluster already there is left as it is", example: 'mesh postgres init --data /srv/pg/data --superuser-file /srv/.mesh/pg/secrets/superuser', exits: [3, 6], json: false })
    .requiredOption('--data <dir>', 'the data directory (the module directory requirement)')
    .requiredOption('--superuser-file <file>', "the superuser's password, as the vault delivered it")
    .action(run(async (values: { data: string; superuserFile: string }) => {
      const logger = pino({ base: { component: 'postgres-init' } });
      const { made } = initCluster(values);
      logger.info({ data: values.data }, made ? 'made a PostgreSQL 15 cluster' : 'the data directory holds a cluster already; left as it is');
      return 0;
    }));
  verb(postgres, 'server', { summary: 'runs PostgreSQL 15 in --data on --host:--port in the foreground (as the postgres user when run as root), exiting with it', example: 'mesh postgres server --data /srv/mesh/postgres/data --host 10.0.0.5 --port 5432', exits: [3, 6], json: false })
    .requiredOption('--data <dir>', 'the data directory, made by mesh postgres init')
    .requiredOption('--host <address>', 'the address it listens on')
    .requiredOption('--port <port>', 'the port it listens on')
    .action(run(async (values: { data: string; host: string; port: string }) => runServer({ data: values.data, host: values.host, port: portFlag(values.port) })));
  verb(postgres, 'logins', { summary: "the provider's ensure step: for each consumer secret delivered beside --superuser-file, its database, the group role that owns it, and a login per credential; again every --every", example: 'mesh postgres logins --host 10.0.0.5 --port 5432 --superuser-file /srv/.mesh/pg/secrets/superuser', exits: [6], json: false })
    .requiredOption('--host <address>', "the server's address")
    .requiredOption('--port <port>', "the server's port")
    .requiredOption('--superuser-file <file>', "the superuser's password, as the vault delivered it")
    .option('--consumers <dir>', 'where the consumer secrets are (default: the consumers folder beside --superuser-file, where the mesh places them)')
    .option('--every <duration>', 'how often it looks again', '1s')
    .option('--once', 'one pass, then exit (6 when the server did not answer)')
    .action(run(postgresLogins));
  verb(postgres, 'sign', { summary: "a consumer: logs in with the login in --pgpass, signs a guestbook in its database and reads how many have, every --every; exits when it cannot for --patience", example: 'mesh postgres sign --pgpass /srv/mesh/guestbook/data/pgpass', exits: [6], json: false })
    .requiredOption('--pgpass <file>', 'host:port:database:user:password, as libpq reads it')
    .option('--every <duration>', 'how often it signs', '5s')
    .option('--patience <duration>', 'how long it tries again, once a second, before it exits saying why', '30s')
    .action(run(postgresSign));
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

const postgresLogins = async (values: { host: string; port: string; superuserFile: string; consumers?: string; every: string; once?: true }): Promise<number> => {
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

const postgresSign = async (values: { pgpass: string; every: string; patience: string }): Promise<number> => {
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
