import { databaseUrlFor, type DatabaseRole } from '../../src/adapters/database-logins.js';
import { loadConfig } from '../../src/config.js';

/**
 * The test stack's PostgreSQL, logged in as one of the mesh's roles: the projector by default,
 * which owns what it creates (fresh projection and status schemas per test), as the controller's
 * projector does. The global setup names the server and each role's password file.
 */
export const testDatabaseUrl = (role: DatabaseRole = 'projector'): string => {
  if (!process.env.MESH_DATABASE_URL) throw new Error('MESH_DATABASE_URL is not set: the jest global setup starts the test stack and sets it');
  return databaseUrlFor(role, loadConfig());
};
