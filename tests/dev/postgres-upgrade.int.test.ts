import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { ADMIN_ROLE, databaseUrlFor, passwordFileName, roleName, type DatabaseRole } from '../../src/adapters/database-logins.js';
import { meshHome } from '../../src/config.js';
import { ensureNodeStatus, recordHeartbeats } from '../../src/controller/node-status.js';
import { freePort } from '../../src/dev/ports.js';
import { HBA, startPostgres, stopPostgres } from '../../src/dev/postgres.js';
import { requestRebuild } from '../../src/projections/builds.js';
import { DEFAULT_SCHEMAS, ensureControlSchema } from '../../src/projections/control.js';
import { uniqueName } from '../helpers/names.js';
import { ledger } from '../projections/test-projections.js';

// A local stack's cluster from before the roles: initdb with `trust`, the bootstrap superuser
// `mesh` owning the projector's and the controller's schemas, the server running. What `mesh dev
// up` runs on it closes it and hands each schema to its role, keeping the rows.

const BIN = '/usr/lib/postgresql/15/bin';
const isRoot = process.getuid?.() === 0;
const asServer = (command: string, args: string[]): [string, string[]] => (isRoot ? ['runuser', ['-u', 'postgres', '--', command, ...args]] : [command, args]);
const run = (command: string, args: string[]): void => {
  const [cmd, cmdArgs] = asServer(command, args);
  const result = spawnSync(cmd, cmdArgs, { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`${command} failed: ${result.stderr || result.stdout}`);
};

describe('a cluster made before the roles, which trusted every local login', () => {
  const dir = join(meshHome(), 'tmp', uniqueName('pg-trust-'));
  const secretsDir = join(dir, 'secrets');
  const data = join(dir, 'postgres', 'data');
  let port: number;
  let said: string[] = [];
  const options = () => ({ dir: join(dir, 'postgres'), port, secretsDir, say: (line: string) => void said.push(line) });
  const urlOf = (role: DatabaseRole): string => databaseUrlFor(role, { databaseUrl: `postgres://127.0.0.1:${port}/mesh`, secretsDir }, {});
  const query = async (url: string, sql: string): Promise<Record<string, unknown>[]> => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return (await client.query(sql)).rows;
    } finally {
      await client.end();
    }
  };

  beforeAll(async () => {
    port = await freePort();
    // As the code before the roles made it, and left it running.
    mkdirSync(join(dir, 'postgres'), { recursive: true });
    mkdirSync(data, { mode: 0o700 });
    chmodSync(data, 0o700);
    if (isRoot) spawnSync('chown', ['-R', 'postgres:postgres', join(dir, 'postgres')]);
    run(`${BIN}/initdb`, ['-D', data, '-U', ADMIN_ROLE, '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8', '--no-instructions']);
    run(`${BIN}/pg_ctl`, ['-D', data, '-l', join(dir, 'postgres', 'postgres.log'), '-o', `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=''`, '-w', 'start']);
    const old = `postgres://${ADMIN_ROLE}@127.0.0.1:${port}`;
    await query(`${old}/postgres`, 'CREATE DATABASE mesh');
    const pool = new pg.Pool({ connectionString: `${old}/mesh`, max: 1 });
    try {
      await ensureControlSchema(pool, DEFAULT_SCHEMAS);
      const build = await requestRebuild(pool, DEFAULT_SCHEMAS, ledger());
      await pool.query(`INSERT INTO "${build.schemaName}".entries (seq, event_index, type, aggregate) VALUES (7, 0, 'test.counted', 'thing.a')`);
      await ensureNodeStatus(pool, 'controller');
      await recordHeartbeats(pool, 'controller', new Map([['lab1', new Date()]]));
    } finally {
      await pool.end();
    }
  });
  afterAll(async () => {
    await stopPostgres({ dir: join(dir, 'postgres'), port }).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  it('is closed by the start `mesh dev up` runs: passwords, roles, its schemas handed to them, rows kept', async () => {
    const started = await startPostgres(options());
    expect(started).toMatchObject({ running: true, started: false, wasOpen: true });
    expect(said.join('\n')).toContain('let local connections in without a password (trust)');
    expect(said.join('\n')).toContain('schemas controller, mesh, projector, projector_ledger_v1_1 now belong to their roles');

    expect(readFileSync(join(data, 'pg_hba.conf'), 'utf8')).toBe(HBA);
    const superuser = new pg.Client({ host: '127.0.0.1', port, database: 'mesh', user: ADMIN_ROLE, password: 'anything' });
    await expect(superuser.connect()).rejects.toMatchObject({ code: '28P01' });

    const admin = `postgres://${ADMIN_ROLE}:${readFileSync(join(secretsDir, passwordFileName('admin')), 'utf8').trim()}@127.0.0.1:${port}/mesh`;
    const owners = await query(
      admin,
      `SELECT n.nspname AS schema, n.nspowner::regrole::text AS owner,
              (SELECT array_agg(DISTINCT c.relowner::regrole::text) FROM pg_class c WHERE c.relnamespace = n.oid) AS relations
         FROM pg_namespace n WHERE n.nspname IN ('projector', 'mesh', 'controller') OR n.nspname LIKE 'projector\\_%' ORDER BY 1`,
    );
    const projector = roleName('projector');
    expect(owners).toEqual([
      { schema: 'controller', owner: roleName('controller'), relations: [roleName('controller')] },
      { schema: 'mesh', owner: projector, relations: [projector] },
      { schema: 'projector', owner: projector, relations: [projector] },
      { schema: 'projector_ledger_v1_1', owner: projector, relations: [projector] },
    ]);

    expect(await query(urlOf('reader'), 'SELECT seq::int FROM mesh.entries')).toEqual([{ seq: 7 }]);
    expect(await query(urlOf('reader'), 'SELECT node FROM controller.node_status')).toEqual([{ node: 'lab1' }]);
    expect(await query(urlOf('controller'), "UPDATE controller.node_status SET heartbeat_at = now() WHERE node = 'lab1' RETURNING node")).toEqual([{ node: 'lab1' }]);
    expect(await query(urlOf('projector'), "INSERT INTO projector_ledger_v1_1.entries (seq, event_index, type, aggregate) VALUES (8, 0, 'test.counted', 'thing.a') RETURNING seq::int")).toEqual([{ seq: 8 }]);
    await expect(query(urlOf('controller'), 'DELETE FROM projector_ledger_v1_1.entries')).rejects.toMatchObject({ code: '42501' });
  });

  it('is left as it is by the next start, passwords and all', async () => {
    const before = readFileSync(join(secretsDir, passwordFileName('reader')), 'utf8');
    said = [];
    const again = await startPostgres(options());
    expect(again).toMatchObject({ started: false, wasOpen: false });
    expect(said).toEqual([]);
    expect(readFileSync(join(secretsDir, passwordFileName('reader')), 'utf8')).toBe(before);
    expect(await query(urlOf('reader'), 'SELECT count(*)::int AS n FROM mesh.entries')).toEqual([{ n: 2 }]);
  });
});
