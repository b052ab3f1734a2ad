import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RefusedError, UnavailableError } from '../errors.js';
import { ensureInstalled, POSTGRESQL_15 } from './packages.js';
import { isListening } from './ports.js';
import { ourProcess } from './processes.js';

// A PostgreSQL 15 cluster of our own (initdb + pg_ctl), listening on loopback TCP only, trusting
// local connections as the `mesh` role. PostgreSQL refuses to run as root, so as root the cluster
// belongs to the Debian `postgres` user and every server command runs through runuser.

export interface PostgresOptions {
  dir: string;
  port: number;
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
const ROLE = 'mesh';
const DATABASE = 'mesh';

const paths = (dir: string) => ({ data: join(dir, 'data'), logFile: join(dir, 'postgres.log') });

export const databaseUrl = (port: number): string => `postgres://${ROLE}@127.0.0.1:${port}/${DATABASE}`;

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

const initCluster = (options: PostgresOptions): void => {
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
  run(`${BIN}/initdb`, ['-D', p.data, '-U', ROLE, '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8', '--no-instructions'], 'initdb');
};

export const startPostgres = async (options: PostgresOptions): Promise<PostgresStatus & { started: boolean }> => {
  const say = options.say ?? (() => undefined);
  const current = postgresStatus(options);
  if (current.running) return { ...current, started: false };
  if (await isListening(options.port)) {
    throw new RefusedError(
      `port ${options.port} (PostgreSQL) on 127.0.0.1 is already taken by another process; stop it, or choose another port with MESH_DEV_PG_PORT`,
      { port: options.port, role: 'PostgreSQL' },
    );
  }
  ensureInstalled(POSTGRESQL_15, say);
  const p = paths(options.dir);
  if (!existsSync(join(p.data, 'PG_VERSION'))) initCluster(options);
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
  ensureDatabase(options.port);
  const status = postgresStatus(options);
  say(`PostgreSQL 15 started on ${databaseUrl(options.port)} (pid ${status.pid}, data in ${options.dir})`);
  return { ...status, started: true };
};

const ensureDatabase = (port: number): void => {
  const psql = (sql: string, database: string): string =>
    execFileSync('psql', ['-h', '127.0.0.1', '-p', String(port), '-U', ROLE, '-d', database, '-At', '-c', sql], {
      encoding: 'utf8',
    });
  if (psql(`SELECT 1 FROM pg_database WHERE datname = '${DATABASE}'`, 'postgres').trim() !== '1') {
    psql(`CREATE DATABASE ${DATABASE}`, 'postgres');
  }
};

export const stopPostgres = async (options: Pick<PostgresOptions, 'dir' | 'port'>): Promise<boolean> => {
  const status = postgresStatus(options);
  if (!status.running) return false;
  run(`${BIN}/pg_ctl`, ['-D', paths(options.dir).data, '-m', 'fast', '-w', '-t', '60', 'stop'], 'pg_ctl stop');
  return true;
};
