import type { CommandUnknownOpts } from '@commander-js/extra-typings';
import { group, lazy, verb } from '../verbs.js';

export const definePostgres = (mesh: CommandUnknownOpts): void => {
  const postgres = group(mesh, 'postgres', "the programs of the mesh's PostgreSQL modules: the provider's cluster and logins, and a consumer");
  verb(postgres, 'init', { summary: "the provider's prepare step: initdb in --data on first run, the superuser's password the secret in --superuser-file; a cluster already there is left as it is", example: 'mesh postgres init --data /srv/pg/data --superuser-file /srv/.mesh/pg/secrets/superuser', exits: [3, 6], json: false })
    .requiredOption('--data <dir>', 'the data directory (the module directory requirement)')
    .requiredOption('--superuser-file <file>', "the superuser's password, as the vault delivered it")
    .action(lazy(async () => (await import('../postgres.js')).postgresInit));
  verb(postgres, 'server', { summary: 'runs PostgreSQL 15 in --data on --host:--port in the foreground (as the postgres user when run as root), exiting with it', example: 'mesh postgres server --data /srv/mesh/postgres/data --host 10.0.0.5 --port 5432', exits: [3, 6], json: false })
    .requiredOption('--data <dir>', 'the data directory, made by mesh postgres init')
    .requiredOption('--host <address>', 'the address it listens on')
    .requiredOption('--port <port>', 'the port it listens on')
    .action(lazy(async () => (await import('../postgres.js')).postgresServer));
  verb(postgres, 'logins', { summary: "the provider's ensure step: for each consumer secret delivered beside --superuser-file, its database, the group role that owns it, and a login per credential; again every --every", example: 'mesh postgres logins --host 10.0.0.5 --port 5432 --superuser-file /srv/.mesh/pg/secrets/superuser', exits: [6], json: false })
    .requiredOption('--host <address>', "the server's address")
    .requiredOption('--port <port>', "the server's port")
    .requiredOption('--superuser-file <file>', "the superuser's password, as the vault delivered it")
    .option('--consumers <dir>', 'where the consumer secrets are (default: the consumers folder beside --superuser-file, where the mesh places them)')
    .option('--every <duration>', 'how often it looks again', '1s')
    .option('--once', 'one pass, then exit (6 when the server did not answer)')
    .action(lazy(async () => (await import('../postgres.js')).postgresLogins));
  verb(postgres, 'sign', { summary: "a consumer: logs in with the login in --pgpass, signs a guestbook in its database and reads how many have, every --every; exits when it cannot for --patience", example: 'mesh postgres sign --pgpass /srv/mesh/guestbook/data/pgpass', exits: [6], json: false })
    .requiredOption('--pgpass <file>', 'host:port:database:user:password, as libpq reads it')
    .option('--every <duration>', 'how often it signs', '5s')
    .option('--patience <duration>', 'how long it tries again, once a second, before it exits saying why', '30s')
    .action(lazy(async () => (await import('../postgres.js')).postgresSign));
};
