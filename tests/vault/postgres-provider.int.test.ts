import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { eventsStreamName } from '../../src/adapters/nats/control-streams.js';
import type { Agent } from '../../src/agent/agent.js';
import { stopRecordedProcesses } from '../../src/agent/left-running.js';
import { meshHome } from '../../src/config.js';
import { freePort } from '../../src/dev/ports.js';
import { credentialTag } from '../../src/domain/secrets/credential-tag.js';
import { readPgpass, type Login } from '../../src/modules/postgres/guestbook.js';
import { runMesh } from '../helpers/cli.js';
import { testDatabaseUrl } from '../helpers/database.js';
import { fixtureManifest } from '../helpers/given.js';
import { uniqueName } from '../helpers/names.js';
import { enrolAndStartAgent, listenToTheWire, plantedFound, projectionRows, runningPids, startSealedPath, storedMessages } from '../helpers/secret-places.js';
import { openTestMesh, waitFor, type TestMesh } from '../helpers/test-mesh.js';
import { dropSchemas, freshSchemas } from '../projections/harness.js';

// End to end with a real provider (issue 17): the vault makes the provider's superuser password
// and the consumer's login; alpha's agent runs the machine's PostgreSQL 15 as the local-postgres
// module (initdb with the delivered superuser secret, the server, the ensure step that makes the
// consumer's database, group role and login from the secret delivered to alpha); beta's agent runs
// the guestbook, which logs in with the same secret delivered to beta and signs. Then `mesh status`
// is healthy, a second credential is a login of its own whose retirement leaves the data, and the
// passwords are in no stream, on no subject, in no projection, and in no process's arguments or
// environment.

describe('a real PostgreSQL provider and a consumer on another node', () => {
  let t: TestMesh;
  let sealed: ReturnType<typeof startSealedPath>;
  let pool: pg.Pool;
  let wire: ReturnType<typeof listenToTheWire>;
  let env: Record<string, string>;
  let port: number;
  const agents: Agent[] = [];
  const schemas = freshSchemas();
  const root = join(meshHome(), 'tmp', uniqueName('pg-provider-'));
  const stateOf = (node: string) => join(root, 'agents', node);
  const nodeRoot = (node: string) => join(root, 'nodes', node);
  const pgpassFile = () => join(nodeRoot('beta'), 'guestbook', 'data', 'pgpass');
  const consumersFolder = () => join(nodeRoot('alpha'), '.mesh', 'local-postgres', 'consumers');
  const assign = (module: string, node: string, hold: string[] = [], values: Record<string, string> = {}) => t.run({ type: 'assign', module, node, hold, pins: {}, values, placements: {} });

  /** The guestbook's rows, read as `login`; undefined while that login cannot get in. */
  const signatures = async (login: Login): Promise<number | undefined> => {
    const client = new pg.Client({ ...login, connectionTimeoutMillis: 3_000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      const { rows } = await client.query<{ count: string }>('SELECT count(*) AS count FROM signatures');
      return Number(rows[0]?.count);
    } catch {
      return undefined;
    } finally {
      await client.end().catch(() => undefined);
    }
  };
  /** pids of the processes whose command line holds every one of `words` */
  const processesRunning = (words: string[]): number[] =>
    readdirSync('/proc').flatMap((entry) => {
      if (!/^\d+$/.test(entry)) return [];
      let cmdline: string[];
      try {
        cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      } catch {
        return [];
      }
      return words.every((word) => cmdline.includes(word)) ? [Number(entry)] : [];
    });
  const runningPidsOf = (node: string) => runningPids(stateOf(node));

  beforeAll(async () => {
    mkdirSync(root, { recursive: true });
    port = await freePort();
    t = await openTestMesh();
    pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 2 });
    wire = listenToTheWire(t);
    env = await t.startControlPlane(schemas);
    await t.run({ type: 'register-module', manifest: { name: 'test-vault', provides: [{ provision: 'secret' }], canHold: ['mesh-vault'], resources: {} } });
    for (const name of ['local-postgres', 'guestbook']) await t.run({ type: 'register-module', manifest: fixtureManifest(name) });
    for (const node of ['alpha', 'beta']) await t.run({ type: 'add-node', node, root: nodeRoot(node), address: '127.0.0.1' });
    await assign('test-vault', 'alpha', ['mesh-vault']);
    await assign('local-postgres', 'alpha', [], { port: String(port) });
    await assign('guestbook', 'beta');
    sealed = startSealedPath(t);
    for (const node of ['alpha', 'beta']) agents.push(await enrolAndStartAgent(t, node, stateOf(node)));
  }, 60_000);

  afterAll(async () => {
    wire?.subscription.unsubscribe();
    for (const agent of agents) await agent.stop();
    // The provider's server stops fast on SIGTERM (its launcher asks PostgreSQL for a fast shutdown).
    for (const node of ['alpha', 'beta']) stopRecordedProcesses(stateOf(node), 'SIGTERM');
    await waitFor('the modules to stop', async () => ['alpha', 'beta'].every((node) => runningPidsOf(node).every((pid) => !existsSync(`/proc/${pid}`))), 20_000).catch(() => undefined);
    for (const node of ['alpha', 'beta']) stopRecordedProcesses(stateOf(node), 'SIGKILL');
    await sealed?.stop();
    await t.close();
    await dropSchemas(pool, schemas);
    await pool.end();
    rmSync(root, { recursive: true, force: true });
  }, 60_000);

  it('makes the consumer’s login from the secret delivered to the provider’s node, and the consumer on beta signs with it', async () => {
    const login = readPgpass(await waitFor('the guestbook’s password file on beta', async () => existsSync(pgpassFile()) && pgpassFile(), 60_000));
    // One secret, delivered to both: the consumer presents it, as the login named for it, the provider made the login with it.
    const atConsumer = readFileSync(join(nodeRoot('beta'), '.mesh', 'guestbook', 'secrets', 'db-secret'), 'utf8');
    expect(login).toMatchObject({ host: '127.0.0.1', port, database: 'beta-guestbook', user: `beta-guestbook-${credentialTag(atConsumer)}` });
    expect(login.password).toBe(atConsumer);
    const atProvider = join(consumersFolder(), 'beta-guestbook');
    expect(readFileSync(await waitFor('the login delivered to alpha', async () => existsSync(atProvider) && atProvider), 'utf8')).toBe(atConsumer);
    // and the provider says it holds it in force, which is when alpha's agent calls its copy applied
    expect(await waitFor('the login in force at alpha', async () => existsSync(`${atProvider}.in-force`) && readFileSync(`${atProvider}.in-force`, 'utf8'))).toBe(`${credentialTag(atConsumer)}\n`);
    await waitFor('the guestbook signed by beta', async () => ((await signatures(login)) ?? 0) > 0, 60_000);
    // The data belongs to the consumer's group role, not to the login that wrote it.
    const client = new pg.Client({ ...login });
    await client.connect();
    const { rows } = await client.query<{ tableowner: string }>("SELECT tableowner FROM pg_tables WHERE tablename = 'signatures'");
    await client.end();
    expect(rows).toEqual([{ tableowner: 'beta-guestbook/data' }]);
    // A wrong password is refused: the login is a real one.
    expect(await signatures({ ...login, password: `${login.password}x` })).toBeUndefined();
  }, 120_000);

  it('ensures again without changing anything, and says so when the server does not answer (exit 6)', async () => {
    const superuser = join(nodeRoot('alpha'), '.mesh', 'local-postgres', 'secrets', 'superuser');
    const again = await runMesh(['postgres', 'logins', '--host', '127.0.0.1', '--port', String(port), '--superuser-file', superuser, '--once']);
    expect({ code: again.code, stderr: again.stderr }).toMatchObject({ code: 0 });
    // it logs what it changed, and everything was as it should be
    expect(again.stdout).toBe('');
    const away = await runMesh(['postgres', 'logins', '--host', '127.0.0.1', '--port', String(await freePort()), '--superuser-file', superuser, '--once']);
    expect(away.code).toBe(6);
    expect(away.stderr).toMatch(/PostgreSQL at 127\.0\.0\.1:\d+ did not take the logins: .*ECONNREFUSED/);
  }, 60_000);

  it('mesh status says the mesh does what it was told', async () => {
    const status = await runMesh(['status', '--wait', '60s'], env, 90_000);
    expect({ code: status.code, stdout: status.stdout, stderr: status.stderr }).toMatchObject({ code: 0 });
    expect(status.stdout).toMatch(/^ {2}alpha\s.*local-postgres/m);
    expect(status.stdout).toMatch(/^ {2}beta\s.*guestbook/m);
  }, 120_000);

  it('keeps a second credential as a login of its own, and retiring it keeps what it wrote', async () => {
    const login = readPgpass(pgpassFile());
    // What a rotation places beside the current credential (docs/decisions.md, "A PostgreSQL provider …"),
    // handed to the provider's ensure step in a folder of the test's own: the agent's logins process
    // would otherwise drop, on its next pass, a second login the mesh did not deliver. It is paused
    // meanwhile, so the two ensure steps do not undo each other.
    const superuser = join(nodeRoot('alpha'), '.mesh', 'local-postgres', 'secrets', 'superuser');
    const folder = join(root, 'second-credential');
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, 'beta-guestbook'), readFileSync(join(consumersFolder(), 'beta-guestbook')), { mode: 0o600 });
    const next = { ...login, user: `beta-guestbook-${credentialTag('a-second-credential-of-beta-guestbook')}`, password: 'a-second-credential-of-beta-guestbook' };
    writeFileSync(join(folder, 'beta-guestbook.next'), next.password, { mode: 0o600 });
    const ensure = () => runMesh(['postgres', 'logins', '--host', '127.0.0.1', '--port', String(port), '--superuser-file', superuser, '--consumers', folder, '--once']);
    const [loginsProcess, ...others] = processesRunning(['postgres', 'logins', superuser]);
    expect({ loginsProcess, others }).toEqual({ loginsProcess: expect.any(Number), others: [] });
    if (loginsProcess === undefined) return;
    process.kill(loginsProcess, 'SIGSTOP');
    try {
      expect(await ensure()).toMatchObject({ code: 0 });
      expect(await signatures(next)).toBeDefined();
      const client = new pg.Client({ ...next });
      await client.connect();
      await client.query("INSERT INTO signatures (signed_by) VALUES ('the second credential')");
      await client.end();
      rmSync(join(folder, 'beta-guestbook.next'));
      expect(await ensure()).toMatchObject({ code: 0 });
      expect(await signatures(next)).toBeUndefined();
    } finally {
      process.kill(loginsProcess, 'SIGCONT');
    }
    const client2 = new pg.Client({ ...login });
    await client2.connect();
    const { rows } = await client2.query<{ count: string }>("SELECT count(*) AS count FROM signatures WHERE signed_by = 'the second credential'");
    await client2.end();
    expect(rows).toEqual([{ count: '1' }]);
  }, 90_000);

  it('finds the passwords in the nodes’ files, and nowhere in the streams, on the wire, in a projection or a process’s arguments and environment', async () => {
    const planted = {
      'the login beta/guestbook presents': readFileSync(join(nodeRoot('beta'), '.mesh', 'guestbook', 'secrets', 'db-secret'), 'utf8'),
      'the superuser of alpha/local-postgres': readFileSync(join(nodeRoot('alpha'), '.mesh', 'local-postgres', 'secrets', 'superuser'), 'utf8'),
    };
    expect(planted['the login beta/guestbook presents']).not.toBe(planted['the superuser of alpha/local-postgres']);
    const names = { prefix: t.names.prefix, nodes: t.names.nodesStream, control: t.names.controlStream };
    const processes = ['alpha', 'beta'].flatMap((node) => runningPidsOf(node)).flatMap((pid) => {
      try {
        return [`${readFileSync(`/proc/${pid}/cmdline`, 'utf8')} ${readFileSync(`/proc/${pid}/environ`, 'utf8')}`];
      } catch {
        return [];
      }
    });
    expect(processes.length).toBeGreaterThanOrEqual(3);
    const places = {
      'the wire': wire.heard,
      LOG: await storedMessages(t, t.names.logStream),
      NODES: await storedMessages(t, t.names.nodesStream),
      CONTROL: await storedMessages(t, t.names.controlStream),
      EVENTS: await storedMessages(t, eventsStreamName(names)),
      projections: await projectionRows(pool, schemas),
      'the processes': processes,
    };
    // each place was looked into, and names the secrets it may name
    expect(places.LOG.join('\n')).toContain('"secret":"postgres-database/beta-guestbook"');
    expect(places.NODES.join('\n')).toContain('${secret:postgres-database/beta-guestbook}');
    expect(places.projections.some((row) => row.includes('postgres-database/beta-guestbook'))).toBe(true);
    expect(plantedFound(places, planted)).toEqual([]);
  });
});
