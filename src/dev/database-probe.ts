import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { ADMIN_ROLE, DATABASE_ROLES, passwordFileName, roleName, type DatabaseRole } from '../adapters/database-logins.js';
import { stackSecretsDir } from '../config.js';
import type { AttackOutcome } from './security-probe.js';
import { DATABASE } from './postgres-roles.js';

// The attacks a process on the machine would try against the mesh's PostgreSQL: logging in with
// no password, with another role's password, and running a program as the server's user through
// the mesh's own roles. Each is tried for real; every one must come back "refused".

const attempt = async (user: string, password: string | undefined, port: number, sql?: string): Promise<Omit<AttackOutcome, 'attack'>> => {
  const client = new pg.Client({ host: '127.0.0.1', port, database: DATABASE, user, ...(password === undefined ? { password: '' } : { password }), connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
  } catch (error) {
    const message = (error as Error).message;
    // Only the server refuses: a server that cannot be reached, or a login the attack needed to
    // make before it could be tried (a role's own password), tried nothing.
    if (sql !== undefined) return { refused: false, untried: true, detail: `could not log in as ${user} with its own password to try it (${message})` };
    // With no password to give, the client gives up once the server asks for one (SCRAM): a server
    // that trusted the login would never have asked.
    if (password === undefined && /SASL|password/i.test(message)) return { refused: true, detail: `the server asked for a password (SCRAM) and none was given: ${message}` };
    if (/password authentication failed|no pg_hba\.conf entry/i.test(message)) return { refused: true, detail: `login refused: ${message}` };
    return { refused: false, untried: true, detail: `the server did not answer (${message}), so the login was not tried` };
  }
  try {
    if (!sql) return { refused: false, detail: 'logged in' };
    await client.query(sql);
    return { refused: false, detail: `the server ran it: ${sql}` };
  } catch (error) {
    return { refused: true, detail: (error as Error).message };
  } finally {
    await client.end().catch(() => undefined);
  }
};

export const probeDatabase = async (stack: { dir: string; port: number }): Promise<AttackOutcome[]> => {
  const secrets = stackSecretsDir(stack.dir);
  const password = (role: DatabaseRole): string | undefined => {
    const file = join(secrets, passwordFileName(role));
    return existsSync(file) ? readFileSync(file, 'utf8').trim() : undefined;
  };
  const outcomes: AttackOutcome[] = [];
  const record = async (attack: string, result: Promise<Omit<AttackOutcome, 'attack'>>) => outcomes.push({ attack, ...(await result) });
  await record(`log in as the bootstrap superuser ${ADMIN_ROLE} with no password`, attempt(ADMIN_ROLE, undefined, stack.port));
  for (const role of DATABASE_ROLES) {
    await record(`log in as ${roleName(role)} with no password`, attempt(roleName(role), undefined, stack.port));
    await record(`log in as ${roleName(role)} with a guessed password`, attempt(roleName(role), 'mesh', stack.port));
    const own = password(role);
    if (own === undefined) continue;
    const other = DATABASE_ROLES.find((r) => r !== role) ?? role;
    await record(`log in as ${roleName(other)} with ${roleName(role)}'s password`, attempt(roleName(other), own, stack.port));
    await record(`run a program as the server's user through ${roleName(role)} (COPY … TO PROGRAM)`, attempt(roleName(role), own, stack.port, `COPY (SELECT 1) TO PROGRAM 'id'`));
    await record(`read a server file through ${roleName(role)}`, attempt(roleName(role), own, stack.port, `SELECT pg_read_file('/etc/passwd')`));
  }
  const reader = password('reader');
  if (reader !== undefined) await record(`${roleName('reader')} writes a projection`, attempt(roleName('reader'), reader, stack.port, `CREATE TABLE mesh.intruder (id int)`));
  return outcomes;
};
