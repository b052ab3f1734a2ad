import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ADMIN_ROLE, passwordFileName } from '../adapters/database-logins.js';
import { RefusedError, UnavailableError } from '../errors.js';
import { ensureInstalled, POSTGRESQL_15 } from './packages.js';
import { isListening } from './ports.js';
import { DATABASE, ensurePasswordFiles, secureCluster } from './postgres-roles.js';
import { ourProcess } from './processes.js';

// A PostgreSQL 15 cluster of our own (initdb + pg_ctl), listening on loopback TCP only, where
// every login is a role with a password (SCRAM): the roles and their grants are in
// postgres-roles.ts, the passwords in files of the stack's secrets folder. PostgreSQL refuses to
// run as root, so as root the cluster belongs to the Debian `postgres` user and every server
// command runs through runuser.

export interface PostgresOptions {
  dir: string;
  port: number;
  /** where the roles' password files are kept (made on first start) */
  secretsDir: string;
  say?: (line: string) => void;
}

export interface PostgresStatus {
  running: boolean;
  pid?: number;
  url: string;
  port: number;
  dir: string;
}

const BIN = '/usr/lib/postgresql/15/bin';

const paths = (dir: string) => ({ data: join(dir, 'data'), logFile: join(dir, 'postgres.log'), hba: join(dir, 'data', 'pg_hba.conf') });

/** The server's address, with no login in it: each process adds its own role (src/adapters/database-logins.ts). */
export const databaseUrl = (port: number): string => `postgres://127.0.0.1:${port}/${DATABASE}`;

/**
 * Password logins over loopback TCP, and nothing else: no `trust`, no replication, and no Unix
 * socket line, since the server opens none. Written at initdb and again whenever it differs.
 */
export const HBA = `# Written by \`mesh dev up\` (src/dev/postgres.ts), and written again whenever it differs.
# Every login is a role with a password (SCRAM), over loopback TCP; the server has no Unix socket.
# TYPE  DATABASE  USER  ADDRESS       METHOD
host    all       all   127.0.0.1/32  scram-sha-256
host    all       all   ::1/128       scram-sha-256
`;

const isRoot = (): boolean => typeof process.getuid === 'function' && process.getuid() === 0;

const serverUser = (): { uid: number; gid: number } | undefined => {
  if (!isRoot()) return undefined;
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('postgres:'));
  const [, , uid, gid] = line?.split(':') ?? [];
  if (!uid || !gid) {
    throw new RefusedError('running as root, PostgreSQL needs the `postgres` user to own its cluster, and there is none; run: apt-get install -y postgresql');
  }
  return { uid: Number(uid), gid: Number(gid) };
};

const asServerUser = (command: string, args: string[]): [string, string[]] =>
  isRoot() ? ['runuser', ['-u', 'postgres', '--', command, ...args]] : [command, args];

const run = (command: string, args: string[], what: string): string => {
  const [cmd, cmdArgs] = asServerUser(command, args);
  const result = spawnSync(cmd, cmdArgs, { encoding: 'utf8' });
  if (result.status !== 0) {
    throw new UnavailableError(`${what} failed (exit ${result.status}): ${(result.stderr || result.stdout).trim()}`);
  }
  return result.stdout;
};

export const postgresStatus = (options: Pick<PostgresOptions, 'dir' | 'port'>): PostgresStatus => {
  const p = paths(options.dir);
  const pid = ourProcess(join(p.data, 'postmaster.pid'), p.data);
  return {
    running: pid !== undefined,
    ...(pid !== undefined ? { pid } : {}),
    url: databaseUrl(options.port),
    port: options.port,
    dir: options.dir,
  };
};

/** A file only the server's OS user reads (as root, the secrets folder is closed to it). */
const writeServerFile = (file: string, content: string): void => {
  writeFileSync(file, content, { mode: 0o600 });
  chmodSync(file, 0o600);
  const owner = serverUser();
  if (owner) chownSync(file, owner.uid, owner.gid);
};

const initCluster = (options: PostgresOptions, adminPassword: string): void => {
  const p = paths(options.dir);
  // Only the data folder is closed to others; folders made above it keep the default mode, so the
  // postgres user can reach it when a fresh MESH_HOME is created here.
  mkdirSync(options.dir, { recursive: true });
  mkdirSync(p.data, { recursive: true, mode: 0o700 });
  chmodSync(p.data, 0o700);
  const owner = serverUser();
  if (owner) {
    chownSync(options.dir, owner.uid, owner.gid);
    chownSync(p.data, owner.uid, owner.gid);
    const reachable = spawnSync('runuser', ['-u', 'postgres', '--', 'test', '-w', p.data]);
    if (reachable.status !== 0) {
      throw new RefusedError(
        `the postgres user cannot reach ${p.data}: a folder above it is closed to other users; give it search permission (chmod o+x on each parent) or set MESH_HOME to a folder it can reach`,
        { dir: p.data },
      );
    }
  }
  // The admin's password reaches initdb through a file of the server user's, removed right after.
  const pwfile = join(options.dir, 'initdb.pwfile');
  writeServerFile(pwfile, `${adminPassword}\n`);
  try {
    run(`${BIN}/initdb`, ['-D', p.data, '-U', ADMIN_ROLE, '--auth=scram-sha-256', `--pwfile=${pwfile}`, '-E', 'UTF8', '--locale=C.UTF-8', '--no-instructions'], 'initdb');
  } finally {
    rmSync(pwfile, { force: true });
  }
  writeServerFile(p.hba, HBA);
};

/**
 * Writes our pg_hba.conf when the cluster's differs, and says whether the old one let anyone in
 * without a password (a cluster made before the roles, with `trust`).
 */
const ensureHba = (dir: string): { written: boolean; trusted: boolean } => {
  const p = paths(dir);
  const current = existsSync(p.hba) ? readFileSync(p.hba, 'utf8') : '';
  if (current === HBA) return { written: false, trusted: false };
  const trusted = current.split('\n').some((line) => /^\s*[^#\s].*\btrust\b/.test(line));
  writeServerFile(p.hba, HBA);
  return { written: true, trusted };
};

export interface StartedPostgres extends PostgresStatus {
  started: boolean;
  /** the cluster accepted logins without a password until this start closed it */
  wasOpen: boolean;
}

export const startPostgres = async (options: PostgresOptions): Promise<StartedPostgres> => {
  const say = options.say ?? (() => undefined);
  const current = postgresStatus(options);
  const p = paths(options.dir);
  if (!current.running && (await isListening(options.port))) {
    throw new RefusedError(
      `port ${options.port} (PostgreSQL) on 127.0.0.1 is already taken by another process; stop it, or choose another port with MESH_DEV_PG_PORT`,
      { port: options.port, role: 'PostgreSQL' },
    );
  }
  const { passwords, made } = ensurePasswordFiles(options.secretsDir);
  if (!current.running) {
    ensureInstalled(POSTGRESQL_15, say);
    if (!existsSync(join(p.data, 'PG_VERSION'))) initCluster(options, passwords.admin);
    const owner = serverUser();
    if (owner && !existsSync(p.logFile)) {
      execFileSync('touch', [p.logFile]);
      chownSync(p.logFile, owner.uid, owner.gid);
    }
    const serverOptions = [
      `-p ${options.port}`,
      `-c listen_addresses=127.0.0.1`,
      `-c unix_socket_directories=''`,
      `-c fsync=on`,
      `-c max_connections=200`,
    ].join(' ');
    run(`${BIN}/pg_ctl`, ['-D', p.data, '-l', p.logFile, '-o', serverOptions, '-w', '-t', '60', 'start'], 'pg_ctl start');
  }
  // Every start, also of a running server: the roles and grants first (a cluster made before them
  // still lets the admin in without a password), then the logins that need passwords.
  const secured = await secureCluster({ port: options.port, passwords, adminFile: join(options.secretsDir, passwordFileName('admin')) });
  const hba = ensureHba(options.dir);
  if (hba.written) run(`${BIN}/pg_ctl`, ['-D', p.data, 'reload'], 'pg_ctl reload');
  const wasOpen = hba.trusted;
  if (wasOpen) {
    say(`PostgreSQL in ${options.dir} let local connections in without a password (trust); it now asks every login for its role's password (scram-sha-256)`);
  }
  if (secured.handedOver.length > 0) say(`PostgreSQL: schemas ${secured.handedOver.join(', ')} now belong to their roles instead of the superuser ${ADMIN_ROLE}`);
  if (made.length > 0) say(`PostgreSQL passwords for ${made.join(', ')} written to ${options.secretsDir} (readable by you alone)`);
  const status = postgresStatus(options);
  if (!current.running) say(`PostgreSQL 15 started on ${databaseUrl(options.port)} (pid ${status.pid}, data in ${options.dir})`);
  return { ...status, started: !current.running, wasOpen };
};

/** Stops the server: `fast` by default; `immediate` as a crash would (tests of an outage), recovering from the WAL at the next start. */
export const stopPostgres = async (options: Pick<PostgresOptions, 'dir' | 'port'>, mode: 'fast' | 'immediate' = 'fast'): Promise<boolean> => {
  const status = postgresStatus(options);
  if (!status.running) return false;
  run(`${BIN}/pg_ctl`, ['-D', paths(options.dir).data, '-m', mode, '-w', '-t', '60', 'stop'], 'pg_ctl stop');
  return true;
};
