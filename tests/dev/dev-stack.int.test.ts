import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { meshHome } from '../../src/config.js';
import { freePort } from '../../src/dev/ports.js';
import { runMesh } from '../helpers/cli.js';
import { uniqueName } from '../helpers/names.js';
import { SYSTEM_SEATS } from '../../src/domain/seats/system-seats.js';

// A new mesh's log: mesh.initialised, one seat.defined per system seat, the first operator, and the mesh's own first secrets.
/** mesh.initialised, the system seats, the first operator, and the mesh's own first secrets (the PostgreSQL roles' four passwords) */
const GENESIS_COMMITS = 2 + SYSTEM_SEATS.length + 4;

// `mesh dev up|down|status` and `mesh log` as an operator runs them: child processes, real
// servers, a stack folder and ports of this test's own, addresses found with no flags.

describe('the local stack from the command line', () => {
  const dir = join(meshHome(), 'tmp', uniqueName('stack-'));
  let env: Record<string, string | undefined>;

  beforeAll(async () => {
    env = {
      MESH_DEV_DIR: dir,
      MESH_DEV_NATS_PORT: String(await freePort()),
      MESH_DEV_PG_PORT: String(await freePort()),
      MESH_DEV_HTTP_PORT: String(await freePort()),
      // The verbs must find the stack from its folder, not from the test stack's variables.
      MESH_NATS_URL: undefined,
      MESH_DATABASE_URL: undefined,
      // …and reach its bus as its own controller and operator, as on any machine.
      MESH_BUS_KEY: undefined,
      MESH_PG_PASSWORD_FILE_PROJECTOR: undefined,
      MESH_PG_PASSWORD_FILE_CONTROLLER: undefined,
      MESH_PG_PASSWORD_FILE_READER: undefined,
      MESH_ACTOR: 'operator:grace',
    };
  });
  afterAll(async () => {
    await runMesh(['dev', 'down'], env);
    rmSync(dir, { recursive: true, force: true });
  });

  const mesh = (...args: string[]) => runMesh(args, env);

  it('starts NATS and PostgreSQL, creates the log, and is a no-op when started again', async () => {
    const up = await mesh('dev', 'up', '--json');
    expect(up.stderr).toBe('');
    expect(up.code).toBe(0);
    const status = JSON.parse(up.stdout) as { nats: { running: boolean; pid: number; port: number }; postgres: { running: boolean; pid: number }; log: { lastSeq: number } };
    expect(status.nats).toMatchObject({ running: true, port: Number(env.MESH_DEV_NATS_PORT) });
    expect(status.postgres.running).toBe(true);
    expect(status.log.lastSeq).toBe(GENESIS_COMMITS);

    const again = await mesh('dev', 'up');
    expect(again.code).toBe(0);
    expect(again.stderr).toContain(`nats-server already running on nats://127.0.0.1:${env.MESH_DEV_NATS_PORT} (pid ${status.nats.pid})`);
    expect(again.stderr).toContain(`PostgreSQL already running`);
    const described = JSON.parse((await mesh('dev', 'status', '--json')).stdout) as typeof status;
    expect(described.nats.pid).toBe(status.nats.pid);
    expect(described.postgres.pid).toBe(status.postgres.pid);
    expect(described.log.lastSeq).toBe(GENESIS_COMMITS);
  });

  it('prints the log with no flags: the mesh opens with its own first entry, then its seats', async () => {
    // `mesh log` answers from the audit projection: `mesh dev up` started the controller, which folds the log into it.
    const human = await mesh('log');
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^1\s+\S+\s+mesh\.local@1\s+mesh\.initialised\s+operator:grace$/m);

    const json = await mesh('log', '--json');
    const events = json.stdout.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(events).toHaveLength(GENESIS_COMMITS);
    expect(events[0]).toMatchObject({ seq: 1, type: 'mesh.initialised', aggregate: 'mesh.local', actor: 'operator:grace', data: { mesh: 'local', logStream: 'LOG' } });

    expect((await mesh('log', '--type', 'seat.handed-over', '--json')).stdout).toBe('');
    expect((await mesh('log', '--type', 'seat.defined', '--json')).stdout.trim().split('\n')).toHaveLength(SYSTEM_SEATS.length);
    expect((await mesh('log', '--aggregate', 'mesh', '--json')).stdout.trim().split('\n')).toHaveLength(1);
    expect((await mesh('log', '--aggregate', 'seat.mesh-git', '--json')).stdout).toContain('"name":"mesh-git"');
    // the mesh's own first secrets: named by genesis, sealed in a file only the user reads, never in the log
    const founded = (await mesh('log', '--type', 'secret.founded', '--json')).stdout.trim().split('\n').map((line) => JSON.parse(line) as { actor: string; data: { secret: string } });
    expect(founded.map((e) => [e.data.secret, e.actor])).toEqual(['admin', 'projector', 'controller', 'reader'].map((owner) => [`mesh/postgres-${owner}`, 'genesis']));
    expect(statSync(join(dir, 'genesis-secrets.json')).mode & 0o777).toBe(0o600);
    const reader = readFileSync(join(dir, 'secrets', 'postgres-reader.password'), 'utf8').trim();
    expect(readFileSync(join(dir, 'genesis-secrets.json'), 'utf8')).not.toContain(reader);
    expect(json.stdout).not.toContain(reader);
    expect((await mesh('log', '--since', String(GENESIS_COMMITS + 1), '--json')).stdout).toBe('');
  });

  it('refuses bad flags with a message naming the flag and a non-zero exit', async () => {
    const since = await mesh('log', '--since', 'yesterday');
    expect(since.code).toBe(2);
    expect(since.stderr).toContain('--since "yesterday" is not a log sequence');
    const unknown = await mesh('log', '--colour');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('--colour');
    const json = await mesh('log', '--aggregate', 'a..b', '--json');
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout)).toMatchObject({ error: { code: 'validation', field: 'aggregate' } });
    const verb = await mesh('dev', 'sideways');
    expect(verb.code).toBe(2);
    expect(verb.stderr).toContain('up, down, status');
  });

  it('says when the log does not exist instead of creating it', async () => {
    const result = await runMesh(['log'], { ...env, MESH_LOG_STREAM: 'NOT_THE_LOG' });
    expect(result.code).toBe(6);
    expect(result.stderr).toContain('the mesh log (stream NOT_THE_LOG) does not exist');
  });

  it('stops, reports the stack as down with a non-zero exit, and starts again on the same data', async () => {
    const down = await mesh('dev', 'down');
    expect(down.code).toBe(0);
    expect(down.stderr).toContain('nats-server stopped');
    const status = await mesh('dev', 'status');
    expect(status.code).toBe(1);
    expect(status.stdout).toContain('nats-server: not running');
    expect((await mesh('log')).code).toBe(6);

    const up = await mesh('dev', 'up', '--json');
    expect(up.code).toBe(0);
    expect((JSON.parse(up.stdout) as { log: { lastSeq: number } }).log.lastSeq).toBe(GENESIS_COMMITS);
  });

  it('refuses a port that something else holds, naming the port, and starts nothing', async () => {
    const squatter: Server = createServer();
    const port = await freePort();
    await new Promise<void>((r) => squatter.listen(port, '127.0.0.1', r));
    try {
      const other = { ...env, MESH_DEV_DIR: `${dir}-squatted`, MESH_DEV_NATS_PORT: String(port), MESH_DEV_PG_PORT: String(await freePort()) };
      const refused = await runMesh(['dev', 'up'], other);
      expect(refused.code).toBe(3);
      expect(refused.stderr).toContain(`port ${port} (NATS client) on 127.0.0.1 is already taken by another process`);
      const status = await runMesh(['dev', 'status', '--json'], other);
      expect(JSON.parse(status.stdout)).toMatchObject({ nats: { running: false }, postgres: { running: false } });
    } finally {
      squatter.close();
      rmSync(`${dir}-squatted`, { recursive: true, force: true });
    }
  });
});
