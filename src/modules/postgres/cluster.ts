import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RefusedError, UnavailableError, ValidationError } from '../../errors.js';
import { findUser } from '../../agent/system-users.js';

// The PostgreSQL provider's cluster: made with the machine's installed PostgreSQL 15 (initdb) in
// the module's data directory, its superuser's password the secret the vault made for it, and
// run (postgres) in the foreground for its agent to supervise. PostgreSQL will not run as root:
// an agent running as root runs it as the machine's `postgres` user, which then owns the data.

export const POSTGRES_BIN = process.env.MESH_POSTGRES_BIN ?? '/usr/lib/postgresql/15/bin';

/** Password logins only, over TCP from anywhere the server listens; no `trust` and no socket. */
export const PROVIDER_HBA = `# Written by the mesh's PostgreSQL provider (src/modules/postgres/cluster.ts).
# Every login is a role with a password (SCRAM) over TCP; the server opens no Unix socket.
# TYPE  DATABASE  USER  ADDRESS  METHOD
host    all       all   all      scram-sha-256
`;

const serverUser = (): { uid: number; gid: number } | undefined => {
  if (process.getuid?.() !== 0) return undefined;
  const user = findUser('postgres');
  if (!user) throw new RefusedError('running as root, the PostgreSQL provider runs the server as the `postgres` user, and this machine has none: install PostgreSQL 15 (apt-get install -y postgresql-15)');
  return { uid: user.uid, gid: user.gid };
};

const requireBinary = (name: string): string => {
  const path = join(POSTGRES_BIN, name);
  if (!existsSync(path)) throw new UnavailableError(`${path} is not there: the PostgreSQL provider runs this machine's PostgreSQL 15 (apt-get install -y postgresql-15, or MESH_POSTGRES_BIN)`);
  return path;
};

/** initdb on first run; a data directory that holds a cluster already is left as it is. */
export const initCluster = (options: { data: string; superuserFile: string }): { made: boolean } => {
  if (existsSync(join(options.data, 'PG_VERSION'))) return { made: false };
  if (!existsSync(options.data)) throw new ValidationError(`the data directory ${options.data} does not exist (the module's directory requirement makes it)`, { field: '--data' });
  if (!existsSync(options.superuserFile)) throw new ValidationError(`${options.superuserFile} is not there: the superuser's password is the secret the vault delivers there`, { field: '--superuser-file' });
  const password = readFileSync(options.superuserFile, 'utf8').trim();
  if (!password) throw new ValidationError(`${options.superuserFile} is empty: the superuser's password is the secret the vault delivers there`, { field: '--superuser-file' });
  const owner = serverUser();
  // initdb reads the password from a file the server's user can read, gone as soon as it is read.
  const scratch = mkdtempSync(join(tmpdir(), 'mesh-postgres-init-'));
  const pwfile = join(scratch, 'superuser');
  writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  try {
    if (owner) {
      for (const path of [scratch, pwfile, options.data]) chownSync(path, owner.uid, owner.gid);
    }
    chmodSync(options.data, 0o700);
    const initdb = requireBinary('initdb');
    const args = ['-D', options.data, '-U', 'postgres', '--pwfile', pwfile, '-A', 'scram-sha-256', '-E', 'UTF8', '--locale', 'C', '--no-instructions'];
    const result = spawnSync(initdb, args, { encoding: 'utf8', ...(owner ? { uid: owner.uid, gid: owner.gid } : {}) });
    if (result.status !== 0) throw new UnavailableError(`initdb in ${options.data} failed (exit ${result.status}): ${(result.stderr || result.stdout).trim()}`);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  writeFileSync(join(options.data, 'pg_hba.conf'), PROVIDER_HBA, { mode: 0o600 });
  if (owner) chownSync(join(options.data, 'pg_hba.conf'), owner.uid, owner.gid);
  return { made: true };
};

/** A server left running in the data directory by a launcher killed outright: stopped (fast) before another starts. */
const stopLeftOver = async (data: string): Promise<void> => {
  const pidFile = join(data, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0) return;
  const alive = () => {
    try {
      process.kill(pid, 0);
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('postgres');
    } catch {
      return false;
    }
  };
  if (!alive()) return;
  process.kill(pid, 'SIGINT');
  for (let waited = 0; waited < 30_000 && alive(); waited += 100) await new Promise((r) => setTimeout(r, 100));
};

/**
 * Runs the server in the foreground until it exits, and exits with it. A stop asked of the
 * launcher (SIGTERM, SIGINT) is a fast shutdown of the server: connected clients do not hold it.
 */
export const runServer = async (options: { data: string; host: string; port: number }): Promise<number> => {
  if (!existsSync(join(options.data, 'PG_VERSION'))) throw new UnavailableError(`${options.data} holds no cluster yet: the module's prepare step (mesh postgres init) makes it`);
  const owner = serverUser();
  await stopLeftOver(options.data);
  const args = ['-D', options.data, '-p', String(options.port), '-c', `listen_addresses=${options.host}`, '-c', 'unix_socket_directories=', '-c', `hba_file=${join(options.data, 'pg_hba.conf')}`];
  const child = spawn(requireBinary('postgres'), args, { stdio: 'inherit', ...(owner ? { uid: owner.uid, gid: owner.gid } : {}) });
  const stop = () => child.kill('SIGINT');
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  return new Promise((resolve) => {
    child.once('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
    child.once('error', () => resolve(1));
  });
};
