import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { ADMIN_ROLE, DATABASE_ROLES, passwordFileName, roleName, type DatabaseRole } from '../../src/adapters/database-logins.js';
import { stackSecretsDir } from '../../src/config.js';
import { ensureNodeStatus, recordHeartbeats } from '../../src/controller/node-status.js';
import { requestRebuild } from '../../src/projections/builds.js';
import type { Projector } from '../../src/projections/projector.js';
import { ReadBarrier } from '../../src/projections/read-barrier.js';
import { sqlstateOf } from '../../src/projections/sql.js';
import { runMesh } from '../helpers/cli.js';
import { testDatabaseUrl } from '../helpers/database.js';
import { uniqueName } from '../helpers/names.js';
import { appendMany, dropSchemas, eventually, freshSchemas, servingBuild, startTestProjector, useLogAndPool, waitServingAt } from '../projections/harness.js';
import { ledger } from '../projections/test-projections.js';
import { testStack } from '../setup/test-stack.js';

// The test stack's PostgreSQL as an attacker on the same machine meets it, and as each part of the
// mesh uses it: no login without a password, one role's password opens no other, no role can run a
// program or reach the server's files, and each reads or writes only what its part needs.

const server = (): { host: string; port: number } => {
  const url = new URL(process.env.MESH_DATABASE_URL ?? '');
  return { host: url.hostname, port: Number(url.port) };
};

const passwordOf = (owner: DatabaseRole | 'admin'): string => readFileSync(join(stackSecretsDir(testStack().dir), passwordFileName(owner)), 'utf8').trim();

/** Connects with exactly these credentials; the error when the server says no. */
const login = async (user: string, password?: string, database = 'mesh'): Promise<pg.Client> => {
  const client = new pg.Client({ ...server(), database, user, ...(password === undefined ? {} : { password }) });
  client.on('error', () => undefined);
  await client.connect();
  return client;
};

const as = async <T>(role: DatabaseRole, work: (client: pg.Client) => Promise<T>): Promise<T> => {
  const client = new pg.Client({ connectionString: testDatabaseUrl(role) });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
};

/** The SQLSTATE the server answers `sql` with as `role`, or 'ok'. */
const answer = (role: DatabaseRole, sql: string): Promise<string> =>
  as(role, async (client) => {
    try {
      await client.query(sql);
      return 'ok';
    } catch (error) {
      return sqlstateOf(error) ?? (error as Error).message;
    }
  });

const INSUFFICIENT_PRIVILEGE = '42501';

describe('PostgreSQL gives each part of the mesh only what it needs', () => {
  const schemas = freshSchemas();
  const status = uniqueName('status_');
  let projector: Projector | undefined;
  let controllerPool: pg.Pool;
  // Before the shared pool's own afterAll (hooks run in the order they are declared), which ends it.
  afterAll(async () => {
    await projector?.stop();
    await dropSchemas(shared.pool, schemas);
    await controllerPool.query(`DROP SCHEMA IF EXISTS "${status}" CASCADE`);
    await controllerPool.end();
  });
  const shared = useLogAndPool();

  beforeAll(async () => {
    await appendMany(shared.testLog, 20, (i) => ({ type: 'test.counted', data: { n: i } }));
    projector = await startTestProjector(shared.testLog, { schemas, projections: [ledger()] });
    await waitServingAt(shared.pool, schemas, 'ledger', await shared.testLog.log.headSeq());
    // The controller's own table, made by the controller's role as the report ingester makes it.
    controllerPool = new pg.Pool({ connectionString: testDatabaseUrl('controller'), max: 1 });
    controllerPool.on('error', () => undefined);
    await ensureNodeStatus(controllerPool, status);
    await recordHeartbeats(controllerPool, status, new Map([['lab1', new Date()]]));
  });

  it('lets no one in without a password, not even the way the attack did it (psql, no password, as the superuser)', async () => {
    for (const user of [ADMIN_ROLE, 'postgres', ...DATABASE_ROLES.map(roleName)]) {
      await expect(login(user)).rejects.toThrow(/password/);
      await expect(login(user, 'guessed')).rejects.toMatchObject({ code: '28P01' });
    }
    const { host, port } = server();
    const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('PG')));
    const psql = spawnSync('psql', ['-w', '-h', host, '-p', String(port), '-U', ADMIN_ROLE, '-d', 'mesh', '-c', "COPY (SELECT 1) TO PROGRAM 'id'"], {
      encoding: 'utf8',
      env: { ...env, PGPASSFILE: '/dev/null' },
    });
    expect(psql.status).not.toBe(0);
    expect(psql.stderr).toContain('no password supplied');
  });

  it("opens no role with another role's password", async () => {
    for (const owner of ['admin', ...DATABASE_ROLES] as const) {
      for (const role of DATABASE_ROLES) {
        if (role === owner) continue;
        await expect(login(roleName(role), passwordOf(owner))).rejects.toMatchObject({ code: '28P01' });
      }
    }
    for (const role of DATABASE_ROLES) await expect(login(ADMIN_ROLE, passwordOf(role))).rejects.toMatchObject({ code: '28P01' });
  });

  it('lets no role run a program or read or write a file as the server', async () => {
    for (const role of DATABASE_ROLES) {
      expect([role, await answer(role, "COPY (SELECT 1) TO PROGRAM 'id'")]).toEqual([role, INSUFFICIENT_PRIVILEGE]);
      expect([role, await answer(role, "COPY (SELECT 1) TO '/tmp/mesh-copy-out'")]).toEqual([role, INSUFFICIENT_PRIVILEGE]);
      expect([role, await answer(role, "SELECT pg_read_file('/etc/passwd')")]).toEqual([role, INSUFFICIENT_PRIVILEGE]);
      expect([role, await answer(role, 'CREATE ROLE intruder SUPERUSER LOGIN')]).toEqual([role, INSUFFICIENT_PRIVILEGE]);
      expect([role, await answer(role, `ALTER ROLE ${roleName(role)} SUPERUSER`)]).toEqual([role, INSUFFICIENT_PRIVILEGE]);
      expect([role, await answer(role, "ALTER SYSTEM SET listen_addresses = '*'")]).toEqual([role, INSUFFICIENT_PRIVILEGE]);
    }
  });

  it('makes no role a superuser, a role maker, or a member of the server-program and server-file roles', async () => {
    const { rows } = await shared.pool.query(
      `SELECT rolname, rolsuper, rolcreaterole, rolcreatedb, rolreplication, rolbypassrls,
              pg_has_role(rolname, 'pg_execute_server_program', 'MEMBER') AS program,
              pg_has_role(rolname, 'pg_read_server_files', 'MEMBER') AS read_files,
              pg_has_role(rolname, 'pg_write_server_files', 'MEMBER') AS write_files,
              (SELECT count(*)::int FROM pg_auth_members WHERE member = pg_roles.oid) AS memberships
         FROM pg_roles WHERE rolname = ANY($1) ORDER BY rolname`,
      [DATABASE_ROLES.map(roleName)],
    );
    expect(rows).toEqual(
      DATABASE_ROLES.map(roleName)
        .sort()
        .map((rolname) => ({ rolname, rolsuper: false, rolcreaterole: false, rolcreatedb: false, rolreplication: false, rolbypassrls: false, program: false, read_files: false, write_files: false, memberships: 0 })),
    );
    for (const role of DATABASE_ROLES) expect(await as(role, async (c) => (await c.query('SHOW is_superuser')).rows[0])).toEqual({ is_superuser: 'off' });
  });

  it('lets no one create in schema public, and the reader create nothing at all', async () => {
    for (const role of DATABASE_ROLES) {
      expect([role, await answer(role, `CREATE TABLE public.${uniqueName('t')} (a int)`)]).toEqual([role, INSUFFICIENT_PRIVILEGE]);
    }
    expect(await answer('reader', `CREATE SCHEMA ${uniqueName('r')}`)).toBe(INSUFFICIENT_PRIVILEGE);
    expect(await answer('reader', `CREATE TEMP TABLE ${uniqueName('t')} (a int)`)).toBe(INSUFFICIENT_PRIVILEGE);
    expect(await answer('reader', `CREATE TABLE "${schemas.read}".${uniqueName('t')} (a int)`)).toBe(INSUFFICIENT_PRIVILEGE);
    expect(await answer('reader', `CREATE TABLE "${status}".${uniqueName('t')} (a int)`)).toBe(INSUFFICIENT_PRIVILEGE);
    const { rows } = await shared.pool.query(`SELECT has_database_privilege($1, 'mesh', 'CREATE') AS db, has_database_privilege($1, 'postgres', 'CONNECT') AS postgres`, [roleName('reader')]);
    expect(rows[0]).toEqual({ db: false, postgres: false });
  });

  it('lets the reader read the projections, the builds and node status, and change none of them', async () => {
    const build = await servingBuild(shared.pool, schemas, 'ledger');
    const read = await as('reader', async (c) => ({
      entries: (await c.query(`SELECT count(*)::int AS n FROM "${schemas.read}".entries`)).rows[0].n as number,
      builds: (await c.query(`SELECT projection, status FROM "${schemas.control}".builds`)).rows,
      nodes: (await c.query(`SELECT node FROM "${status}".node_status`)).rows,
    }));
    expect(read).toEqual({ entries: 20, builds: [{ projection: 'ledger', status: 'serving' }], nodes: [{ node: 'lab1' }] });
    for (const sql of [
      `INSERT INTO "${schemas.read}".entries (seq, event_index, type, aggregate) VALUES (1, 0, 'x', 'y')`,
      `DELETE FROM "${schemas.read}".entries`,
      `UPDATE "${build?.schemaName}".totals SET sum = 0`,
      `UPDATE "${schemas.control}".builds SET checkpoint = 0`,
      `INSERT INTO "${status}".node_status (node) VALUES ('forged')`,
      `UPDATE "${status}".node_status SET heartbeat_at = now()`,
      `DROP VIEW "${schemas.read}".entries`,
      `DROP SCHEMA "${status}" CASCADE`,
    ]) {
      expect([sql, await answer('reader', sql)]).toEqual([sql, INSUFFICIENT_PRIVILEGE]);
    }
  });

  it('lets the controller read the projections but not write them, and the projector not touch node status', async () => {
    const build = await servingBuild(shared.pool, schemas, 'ledger');
    expect(await as('controller', async (c) => (await c.query(`SELECT count(*)::int AS n FROM "${schemas.read}".entries`)).rows[0])).toEqual({ n: 20 });
    for (const sql of [
      `INSERT INTO "${schemas.read}".entries (seq, event_index, type, aggregate) VALUES (1, 0, 'x', 'y')`,
      `INSERT INTO "${build?.schemaName}".entries (seq, event_index, type, aggregate) VALUES (1, 0, 'x', 'y')`,
      `UPDATE "${schemas.control}".builds SET status = 'retired'`,
      `CREATE TABLE "${schemas.read}".${uniqueName('t')} (a int)`,
      `DROP SCHEMA "${build?.schemaName}" CASCADE`,
    ]) {
      expect([sql, await answer('controller', sql)]).toEqual([sql, INSUFFICIENT_PRIVILEGE]);
    }
    for (const sql of [
      `INSERT INTO "${status}".node_status (node) VALUES ('forged')`,
      `UPDATE "${status}".node_status SET heartbeat_at = now()`,
      `SELECT * FROM "${status}".node_status`,
      `CREATE TABLE "${status}".${uniqueName('t')} (a int)`,
      `DROP SCHEMA "${status}" CASCADE`,
    ]) {
      expect([sql, await answer('projector', sql)]).toEqual([sql, INSUFFICIENT_PRIVILEGE]);
    }
  });

  it('lets the reader read the read schema after a blue/green rebuild, and wait for it with LISTEN', async () => {
    const before = await servingBuild(shared.pool, schemas, 'ledger');
    await requestRebuild(shared.pool, schemas, ledger());
    const after = await eventually('the rebuild to serve', () => servingBuild(shared.pool, schemas, 'ledger'), (b) => b !== undefined && b.id !== before?.id);
    expect(after?.schemaName).not.toBe(before?.schemaName);
    const readerPool = new pg.Pool({ connectionString: testDatabaseUrl('reader'), max: 1 });
    const barrier = await ReadBarrier.open(testDatabaseUrl('reader'), readerPool, schemas);
    try {
      const appended = await appendMany(shared.testLog, 5, (i) => ({ type: 'test.counted', data: { n: 100 + i } }));
      await barrier.waitFor(['ledger'], appended, 10_000);
      const { rows } = await readerPool.query(`SELECT count(*)::int AS n FROM "${schemas.read}".entries`);
      expect(rows[0]).toEqual({ n: 25 });
      // A build schema the rebuild created is the projector's; the reader still only reads it.
      expect(await answer('reader', `DELETE FROM "${after?.schemaName}".entries`)).toBe(INSUFFICIENT_PRIVILEGE);
    } finally {
      await barrier.close();
      await readerPool.end();
    }
  });

  it("reads from the command line as the reader, and refuses a verb whose role's password file is missing, naming it", async () => {
    const seats = await runMesh(['seats', '--json']);
    expect([seats.code, seats.stderr]).toEqual([0, '']);
    const missing = join(stackSecretsDir(testStack().dir), 'gone.password');
    const refused = await runMesh(['seats'], { MESH_PG_PASSWORD_FILE_READER: missing });
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain(`no password for PostgreSQL role mesh_reader: ${missing} does not exist. \`npx mesh dev up\` makes it`);
  });

  it('keeps every password in a file only its owner reads, in a folder only its owner opens', () => {
    const dir = stackSecretsDir(testStack().dir);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    for (const owner of ['admin', ...DATABASE_ROLES] as const) {
      expect([owner, statSync(join(dir, passwordFileName(owner))).mode & 0o777]).toEqual([owner, 0o600]);
    }
  });

  it('listens on loopback TCP alone, with no Unix socket, and its pg_hba.conf trusts no one', async () => {
    expect(await as('reader', async (c) => (await c.query('SHOW listen_addresses')).rows[0])).toEqual({ listen_addresses: '127.0.0.1' });
    const admin = await login(ADMIN_ROLE, passwordOf('admin'));
    try {
      expect((await admin.query('SHOW unix_socket_directories')).rows[0]).toEqual({ unix_socket_directories: '' });
      const { rows } = await admin.query('SELECT type, address, auth_method FROM pg_hba_file_rules ORDER BY line_number');
      expect(rows).toEqual([
        { type: 'host', address: '127.0.0.1', auth_method: 'scram-sha-256' },
        { type: 'host', address: '::1', auth_method: 'scram-sha-256' },
      ]);
    } finally {
      await admin.end();
    }
    // From any other address of this machine, nothing answers on the port.
    const outside = Object.values(networkInterfaces())
      .flat()
      .find((a) => a && a.family === 'IPv4' && !a.internal);
    if (outside) {
      const client = new pg.Client({ host: outside.address, port: server().port, database: 'mesh', user: roleName('reader'), password: passwordOf('reader'), connectionTimeoutMillis: 3_000 });
      await expect(client.connect()).rejects.toThrow(/ECONNREFUSED|timeout/);
    }
  });
});
