import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { ADMIN_ROLE, DATABASE_ROLES, passwordFileName, roleName, type DatabaseRole } from '../adapters/database-logins.js';
import { statusSchemaFromEnv } from '../controller/node-status.js';
import { RefusedError, UnavailableError } from '../errors.js';
import { schemasFromEnv } from '../projections/control.js';
import { sqlstateOf } from '../projections/sql.js';

// Who may do what in the local stack's PostgreSQL, set up on every `mesh dev up` by the cluster's
// bootstrap superuser, whose password only the stack's scripts read:
//   mesh_projector  owns what it creates: the projector's control, read and build schemas;
//   mesh_controller owns what it creates: its own tables (node status); reads the projections;
//   mesh_reader     reads the projections and node status, and LISTENs; creates nothing.
// None is a superuser, creates roles or databases, or holds pg_execute_server_program or the
// server-file roles, so none can run a program or touch a file as the server's OS user. Readers
// follow future objects through default privileges: a blue/green switch creates new views and
// build schemas, owned by the projector, and each is readable by the readers as it is created.

export const DATABASE = 'mesh';

export type PasswordOwner = DatabaseRole | 'admin';

const OWNERS: readonly PasswordOwner[] = ['admin', ...DATABASE_ROLES];

/** The roles that may read what `owner` creates. */
const READERS_OF: Record<'projector' | 'controller', DatabaseRole[]> = { projector: ['controller', 'reader'], controller: ['reader'] };

/**
 * Every role's password from its file in `secretsDir` (0700): an existing file is kept (and made
 * 0600 if it was not), a missing or empty one is written with a new random password, mode 0600.
 */
export const ensurePasswordFiles = (secretsDir: string): { passwords: Record<PasswordOwner, string>; made: PasswordOwner[] } => {
  // The folders above it with the usual mode: a recursive mkdir gives its mode to every folder it
  // makes, and a 0700 parent shuts the postgres user out of a data folder beside the secrets.
  mkdirSync(dirname(secretsDir), { recursive: true });
  mkdirSync(secretsDir, { recursive: true, mode: 0o700 });
  chmodSync(secretsDir, 0o700);
  const made: PasswordOwner[] = [];
  const passwords = {} as Record<PasswordOwner, string>;
  for (const owner of OWNERS) {
    const file = join(secretsDir, passwordFileName(owner));
    const kept = existsSync(file) ? readFileSync(file, 'utf8').trim() : '';
    if (kept !== '') {
      chmodSync(file, 0o600);
      passwords[owner] = kept;
      continue;
    }
    // URL-safe, so it goes into a connection URL as it is.
    passwords[owner] = randomBytes(24).toString('base64url');
    writeFileSync(file, `${passwords[owner]}\n`, { mode: 0o600 });
    chmodSync(file, 0o600);
    made.push(owner);
  }
  return { passwords, made };
};

/**
 * The SCRAM-SHA-256 verifier PostgreSQL stores for `password` (RFC 5802, RFC 7677). Sent in
 * `ALTER ROLE … PASSWORD`, it keeps the password itself out of statements and the server's log.
 * The passwords are ASCII, which SASLprep leaves as they are.
 */
export const scramVerifier = (password: string, salt: Buffer = randomBytes(16), iterations = 4096): string => {
  const salted = pbkdf2Sync(password, salt, iterations, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
};

const connectAdmin = async (port: number, database: string, password: string, passwordFile: string): Promise<pg.Client> => {
  const client = new pg.Client({ host: '127.0.0.1', port, database, user: ADMIN_ROLE, password });
  try {
    await client.connect();
    return client;
  } catch (cause) {
    if (sqlstateOf(cause) === '28P01') {
      throw new RefusedError(
        `PostgreSQL on port ${port} refused the admin password in ${passwordFile}: the cluster was set up with another one. Put that file back, or stop the stack and remove its postgres folder to start a new cluster (the projections are rebuilt from the log)`,
        { port, file: passwordFile },
        { cause },
      );
    }
    throw new UnavailableError(`cannot reach PostgreSQL on port ${port} as ${ADMIN_ROLE} to set up its roles: ${(cause as Error).message}`, { port }, { cause });
  }
};

const ensureDatabase = async (admin: pg.Client): Promise<void> => {
  const { rows } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE]);
  if (rows.length === 0) await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(DATABASE)}`);
};

/** The roles exist with exactly these attributes and passwords, and belong to no other role. */
const ensureRoles = async (admin: pg.Client, passwords: Record<PasswordOwner, string>): Promise<void> => {
  await admin.query(`ALTER ROLE ${admin.escapeIdentifier(ADMIN_ROLE)} PASSWORD ${admin.escapeLiteral(scramVerifier(passwords.admin))}`);
  for (const role of DATABASE_ROLES) {
    const name = admin.escapeIdentifier(roleName(role));
    const { rows } = await admin.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [roleName(role)]);
    if (rows.length === 0) await admin.query(`CREATE ROLE ${name}`);
    await admin.query(
      `ALTER ROLE ${name} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS INHERIT PASSWORD ${admin.escapeLiteral(scramVerifier(passwords[role]))}`,
    );
    const { rows: memberOf } = await admin.query<{ granted: string }>(
      'SELECT r.rolname AS granted FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.roleid WHERE m.member = (SELECT oid FROM pg_roles WHERE rolname = $1)',
      [roleName(role)],
    );
    for (const { granted } of memberOf) await admin.query(`REVOKE ${admin.escapeIdentifier(granted)} FROM ${name}`);
  }
  // Only the admin reaches the maintenance databases; the roles reach `mesh` alone.
  for (const other of ['postgres', 'template1']) await admin.query(`REVOKE ALL ON DATABASE ${admin.escapeIdentifier(other)} FROM PUBLIC`);
};

const roleList = (client: pg.Client, roles: readonly DatabaseRole[]): string => roles.map((r) => client.escapeIdentifier(roleName(r))).join(', ');

/** Inside database `mesh`: who may connect and create schemas, and what readers get of future objects. */
const grantDatabase = async (db: pg.Client): Promise<void> => {
  const database = db.escapeIdentifier(DATABASE);
  await db.query(`REVOKE ALL ON DATABASE ${database} FROM PUBLIC`);
  await db.query(`GRANT CONNECT ON DATABASE ${database} TO ${roleList(db, DATABASE_ROLES)}`);
  // The projector creates a schema per build; the controller its own (MESH_CONTROLLER_SCHEMA).
  await db.query(`GRANT CREATE ON DATABASE ${database} TO ${roleList(db, ['projector', 'controller'])}`);
  await db.query(`REVOKE CREATE ON SCHEMA public FROM PUBLIC`);
  for (const owner of ['projector', 'controller'] as const) {
    const forRole = `ALTER DEFAULT PRIVILEGES FOR ROLE ${db.escapeIdentifier(roleName(owner))}`;
    await db.query(`${forRole} GRANT USAGE ON SCHEMAS TO ${roleList(db, READERS_OF[owner])}`);
    await db.query(`${forRole} GRANT SELECT ON TABLES TO ${roleList(db, READERS_OF[owner])}`);
  }
};

const likePrefix = (name: string): string => `${name.replace(/[\\%_]/g, (c) => `\\${c}`)}\\_%`;

/**
 * A cluster set up before the roles existed has the projector's and the controller's schemas owned
 * by the bootstrap superuser: they are handed to their roles (with what readers may see of them),
 * so the projections and node status carry on instead of being rebuilt or lost.
 */
const handOverSchemas = async (db: pg.Client): Promise<string[]> => {
  const schemas = schemasFromEnv();
  const status = statusSchemaFromEnv();
  const { rows } = await db.query<{ nspname: string }>(
    `SELECT nspname FROM pg_namespace WHERE nspowner = (SELECT oid FROM pg_roles WHERE rolname = current_user)
       AND (nspname = ANY($1) OR nspname LIKE $2) ORDER BY nspname`,
    [[schemas.control, schemas.read, status], likePrefix(schemas.control)],
  );
  const kinds: Record<string, string> = { r: 'TABLE', p: 'TABLE', f: 'FOREIGN TABLE', v: 'VIEW', m: 'MATERIALIZED VIEW', S: 'SEQUENCE' };
  await db.query('BEGIN');
  try {
    for (const { nspname } of rows) {
      const owner = nspname === status ? 'controller' : 'projector';
      const schema = db.escapeIdentifier(nspname);
      const to = db.escapeIdentifier(roleName(owner));
      await db.query(`ALTER SCHEMA ${schema} OWNER TO ${to}`);
      // Sequences last, and only those left: a table's own sequences follow it.
      for (const pass of [['r', 'p', 'f', 'v', 'm'], ['S']]) {
        const { rows: relations } = await db.query<{ relname: string; relkind: string }>(
          `SELECT relname, relkind FROM pg_class WHERE relnamespace = $1::regnamespace AND relkind = ANY($2)
             AND relowner = (SELECT oid FROM pg_roles WHERE rolname = current_user)`,
          [nspname, pass],
        );
        for (const { relname, relkind } of relations) await db.query(`ALTER ${kinds[relkind]} ${schema}.${db.escapeIdentifier(relname)} OWNER TO ${to}`);
      }
      await db.query(`GRANT USAGE ON SCHEMA ${schema} TO ${roleList(db, READERS_OF[owner])}`);
      await db.query(`GRANT SELECT ON ALL TABLES IN SCHEMA ${schema} TO ${roleList(db, READERS_OF[owner])}`);
    }
    await db.query('COMMIT');
  } catch (error) {
    await db.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
  return rows.map((r) => r.nspname);
};

/**
 * Makes the cluster on `port` what the header says, with the passwords of `ensurePasswordFiles`;
 * safe to run on every start. Returns the schemas it handed from the superuser to their roles.
 */
export const secureCluster = async (options: { port: number; passwords: Record<PasswordOwner, string>; adminFile: string }): Promise<{ handedOver: string[] }> => {
  const { port, passwords, adminFile } = options;
  const admin = await connectAdmin(port, 'postgres', passwords.admin, adminFile);
  try {
    await ensureDatabase(admin);
    await ensureRoles(admin, passwords);
  } finally {
    await admin.end();
  }
  const db = await connectAdmin(port, DATABASE, passwords.admin, adminFile);
  try {
    await grantDatabase(db);
    return { handedOver: await handOverSchemas(db) };
  } finally {
    await db.end();
  }
};
