import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RefusedError, ValidationError } from '../errors.js';

// Each part of the mesh logs in to PostgreSQL as a role of its own, holding only what its work
// needs (docs/decisions.md, "PostgreSQL roles"): the projector owns the projections, the controller
// owns its own tables and reads the projections, the reader only reads. MESH_DATABASE_URL names
// the server; the role and its password are added here, from a password file `mesh dev up` made.

export type DatabaseRole = 'projector' | 'controller' | 'reader';

export const DATABASE_ROLES: readonly DatabaseRole[] = ['projector', 'controller', 'reader'];

/** The PostgreSQL role each part of the mesh logs in as. */
export const roleName = (role: DatabaseRole): string => `mesh_${role}`;

/** The cluster's bootstrap superuser: only the local stack's scripts log in as it, to set up the roles. */
export const ADMIN_ROLE = 'mesh';

/** A password file's name in the stack's secrets folder. */
export const passwordFileName = (role: DatabaseRole | 'admin'): string => `postgres-${role}.password`;

export interface DatabaseSettings {
  /** the server: `postgres://127.0.0.1:15432/mesh` */
  databaseUrl: string;
  /** where the local stack keeps the password files */
  secretsDir: string;
}

const envName = (prefix: string, role: DatabaseRole): string => `${prefix}_${role.toUpperCase()}`;

/** Where a role's password is read from: MESH_PG_PASSWORD_FILE_<ROLE>, else the stack's secrets folder. */
export const passwordFileOf = (role: DatabaseRole, settings: Pick<DatabaseSettings, 'secretsDir'>, env: NodeJS.ProcessEnv = process.env): string =>
  env[envName('MESH_PG_PASSWORD_FILE', role)] || join(settings.secretsDir, passwordFileName(role));

const parse = (url: string, variable: string): URL => {
  try {
    return new URL(url);
  } catch {
    throw new ValidationError(`${variable} "${withoutPassword(url)}" is not a URL; the local stack's is postgres://127.0.0.1:15432/mesh`, { field: variable });
  }
};

const readPassword = (role: DatabaseRole, file: string): string => {
  const remedy = `\`npx mesh dev up\` makes it for the local stack; for another server set ${envName('MESH_PG_PASSWORD_FILE', role)} or ${envName('MESH_DATABASE_URL', role)}`;
  let password: string;
  try {
    password = readFileSync(file, 'utf8').trim();
  } catch (cause) {
    const why = (cause as NodeJS.ErrnoException).code === 'ENOENT' ? 'does not exist' : `cannot be read (${(cause as Error).message})`;
    throw new RefusedError(`no password for PostgreSQL role ${roleName(role)}: ${file} ${why}. ${remedy}`, { role: roleName(role), file }, { cause });
  }
  if (password === '') throw new RefusedError(`no password for PostgreSQL role ${roleName(role)}: ${file} is empty. ${remedy}`, { role: roleName(role), file });
  return password;
};

/**
 * The URL `role` connects with. MESH_DATABASE_URL_<ROLE> is used as given; so is a
 * MESH_DATABASE_URL that names a user itself (one login for everything, on a server of your own).
 * Otherwise the role's name and the password from its file are added to the server's address.
 */
export const databaseUrlFor = (role: DatabaseRole, settings: DatabaseSettings, env: NodeJS.ProcessEnv = process.env): string => {
  const own = env[envName('MESH_DATABASE_URL', role)];
  if (own) return own;
  const url = parse(settings.databaseUrl, 'MESH_DATABASE_URL');
  if (url.username !== '') return settings.databaseUrl;
  url.username = roleName(role);
  url.password = readPassword(role, passwordFileOf(role, settings, env));
  return url.toString();
};

/** The URL with its password left out, for messages and logs. */
export const withoutPassword = (url: string): string => {
  try {
    const parsed = new URL(url);
    if (parsed.password === '') return url;
    parsed.password = '';
    return parsed.toString();
  } catch {
    return url.replace(/:[^:@/]*@/, '@');
  }
};
