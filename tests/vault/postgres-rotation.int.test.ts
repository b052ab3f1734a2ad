import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { stopRecordedProcesses } from '../../src/agent/left-running.js';
import { meshHome } from '../../src/config.js';
import { freePort } from '../../src/dev/ports.js';
import type { StoredMeshEvent } from '../../src/domain/registry.js';
import { eventsStreamName } from '../../src/adapters/nats/control-streams.js';
import { credentialTag } from '../../src/domain/secrets/credential-tag.js';
import { readPgpass, type Login } from '../../src/modules/postgres/guestbook.js';
import { openControllersMesh, type ControllerProcess } from '../helpers/controller-processes.js';
import { testDatabaseUrl } from '../helpers/database.js';
import { fixtureManifest } from '../helpers/given.js';
import { uniqueName } from '../helpers/names.js';
import { waitFor } from '../helpers/test-mesh.js';
import { nodeAgents, plantedFound, projectionRows, runningPids, secretStatus, storedMessages } from '../helpers/secret-places.js';
import { openTestVault } from '../helpers/vault.js';

// A two-party rotation with the real provider (issue 17): the machine's PostgreSQL 15 run by
// alpha's agent as `local-postgres`, the guestbook on beta signing with the login the vault made
// for it, a `mesh controller` process, and a vault. The reader's agent is away when the rotation
// starts and the controller is killed in the middle. A probe logs in every 200 ms with what beta
// holds in its password file, for the whole run: the consumer must never be without a working
// login, and what it wrote before must be there after. The reader confirms by logging in: the
// guestbook says beside its password file that it signed with what the file says.

const SECRET = 'postgres-database/beta-guestbook';

describe('rotating a consumer’s PostgreSQL login over two credentials, with the real provider', () => {
  let mesh: Awaited<ReturnType<typeof openControllersMesh>>;
  let controller: ControllerProcess;
  let vault: ReturnType<typeof openTestVault>;
  let port = 0;
  let ids = 0;
  let agents: ReturnType<typeof nodeAgents>;
  const root = join(meshHome(), 'tmp', uniqueName('pg-rotation-'));
  const stateOf = (node: string) => join(root, 'agents', node);
  const nodeRoot = (node: string) => join(root, 'nodes', node);
  const pgpassFile = () => join(nodeRoot('beta'), 'guestbook', 'data', 'pgpass');
  const providerFile = () => join(nodeRoot('alpha'), '.mesh', 'local-postgres', 'consumers', 'beta-guestbook');
  const send = async (command: Record<string, unknown>) => {
    const answer = await mesh.send(uniqueName(`cmd-${++ids}`), command);
    if (!answer.ok) throw new Error(JSON.stringify(answer));
    return answer;
  };

  /** Logs in as `login` and runs `sql`; the error's message when it cannot. */
  const asLogin = async <R extends pg.QueryResultRow>(login: Login, sql: string): Promise<{ rows: R[] } | { error: string }> => {
    const client = new pg.Client({ ...login, connectionTimeoutMillis: 3_000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      const { rows } = await client.query<R>(sql);
      return { rows };
    } catch (error) {
      return { error: (error as Error).message };
    } finally {
      await client.end().catch(() => undefined);
    }
  };
  const signatures = async (login: Login): Promise<number | undefined> => {
    const answer = await asLogin<{ count: string }>(login, 'SELECT count(*) AS count FROM signatures');
    return 'rows' in answer ? Number(answer.rows[0]?.count) : undefined;
  };

  // The probe: beta's login, as it stands in its password file, presented to the server.
  const probe = { tries: 0, refused: [] as string[], timer: undefined as NodeJS.Timeout | undefined, busy: false };
  const startProbe = () => {
    probe.timer = setInterval(() => {
      if (probe.busy || !existsSync(pgpassFile())) return;
      probe.busy = true;
      const login = readPgpass(pgpassFile());
      void asLogin(login, 'SELECT 1').then((answer) => {
        probe.tries++;
        if ('error' in answer) probe.refused.push(`${new Date().toISOString()} ${login.user}: ${answer.error}`);
        probe.busy = false;
      });
    }, 200);
  };

  const runningPidsOf = (node: string) => runningPids(stateOf(node));
  const rotationEvents = async (): Promise<StoredMeshEvent[]> => (await mesh.logEvents()).filter((e) => e.aggregate === 'secret.postgres-database.beta-guestbook');
  const eventWhere = (type: string, timeoutMs = 90_000) => waitFor(type, async () => (await rotationEvents()).find((e) => e.type === type), timeoutMs);

  let before: Login;
  let rotated: Login;
  let signedBefore = 0;

  beforeAll(async () => {
    mkdirSync(root, { recursive: true });
    port = await freePort();
    mesh = await openControllersMesh({ leaseMs: 1_500 });
    controller = await mesh.start();
    agents = nodeAgents(mesh.t, stateOf);
    vault = openTestVault(mesh.t.nc, { prefix: mesh.t.names.prefix, controllerKey: mesh.t.controllerKey.publicKey });
    await send({ type: 'register-module', manifest: { name: 'test-vault', provides: [{ provision: 'secret' }], canHold: ['mesh-vault'], resources: {} } });
    for (const name of ['local-postgres', 'guestbook']) await send({ type: 'register-module', manifest: fixtureManifest(name) });
    for (const node of ['alpha', 'beta']) await send({ type: 'add-node', node, root: nodeRoot(node), address: '127.0.0.1' });
    await send({ type: 'assign', module: 'test-vault', node: 'alpha', hold: ['mesh-vault'], pins: {}, values: {}, placements: {} });
    await send({ type: 'assign', module: 'local-postgres', node: 'alpha', hold: [], pins: {}, values: { port: String(port) }, placements: {} });
    await send({ type: 'assign', module: 'guestbook', node: 'beta', hold: [], pins: {}, values: {}, placements: {} });
    for (const node of ['alpha', 'beta']) await agents.enrol(node);
    for (const node of ['alpha', 'beta']) await agents.start(node);
    before = readPgpass(await waitFor('the guestbook’s password file on beta', async () => existsSync(pgpassFile()) && pgpassFile(), 90_000));
    await waitFor('the guestbook signed by beta', async () => ((await signatures(before)) ?? 0) > 0, 90_000);
    // what the old credential wrote: it must be there, the group's, after the rotation
    const marked = await asLogin(before, "INSERT INTO signatures (signed_by) VALUES ('before the rotation')");
    expect(marked).toEqual({ rows: [] });
    signedBefore = (await signatures(before)) ?? 0;
    startProbe();
  }, 180_000);

  afterAll(async () => {
    clearInterval(probe.timer);
    await agents?.stopAll();
    for (const node of ['alpha', 'beta']) stopRecordedProcesses(stateOf(node), 'SIGTERM');
    await waitFor('the modules to stop', async () => ['alpha', 'beta'].every((node) => runningPidsOf(node).every((pid) => !existsSync(`/proc/${pid}`))), 20_000).catch(() => undefined);
    for (const node of ['alpha', 'beta']) stopRecordedProcesses(stateOf(node), 'SIGKILL');
    vault?.remove();
    await mesh?.close();
    rmSync(root, { recursive: true, force: true });
  }, 60_000);

  it('puts the second login in force at the provider while the reader is away, keeps the first, and waits on the reader by name', async () => {
    await agents.stop('beta');
    await send({ type: 'rotate-secret', secret: SECRET });
    await eventWhere('secret.rotation-applied');
    // "applied" means both logins authenticate: the provider said so beside them before alpha's agent reported
    const current = readFileSync(providerFile(), 'utf8');
    const next = readFileSync(`${providerFile()}.next`, 'utf8');
    expect(current).toBe(before.password);
    expect(next).not.toBe(current);
    expect(readFileSync(`${providerFile()}.in-force`, 'utf8').split('\n').filter(Boolean).sort()).toEqual([credentialTag(current), credentialTag(next)].sort());
    const nextLogin = { ...before, user: `beta-guestbook-${credentialTag(next)}`, password: next };
    expect(await signatures(nextLogin)).toBeGreaterThanOrEqual(signedBefore);
    expect(await signatures(before)).toBeGreaterThanOrEqual(signedBefore);
    const waiting = await waitFor('status names the reader', async () => (await secretStatus(mesh.cliEnv())).find((s) => s.secret === SECRET && s.rotation?.step === 'reading'));
    expect(waiting).toMatchObject({ version: 1, rotation: { step: 'reading', waitsOn: [{ node: 'beta', module: 'guestbook' }] } });
    // nothing moves on while it is away: the old login is not retired, beta still presents it
    await new Promise((r) => setTimeout(r, 3_000));
    expect((await rotationEvents()).some((e) => e.type === 'secret.rotation-retired')).toBe(false);
    expect(readPgpass(pgpassFile())).toEqual(before);
    expect(await signatures(before)).toBeGreaterThanOrEqual(signedBefore);
  }, 150_000);

  it('resumes after the controller is killed: the reader returns, logs in with the new login, and only then the old one goes, its data kept', async () => {
    controller.child.kill('SIGKILL');
    await controller.exited;
    controller = await mesh.start();
    await agents.start('beta');
    await eventWhere('secret.rotation-confirmed');
    const retired = await eventWhere('secret.rotation-retired');
    expect(retired.data).toEqual({ secret: SECRET, version: 2, retired: 1 });
    await waitFor('the provider holds the new credential alone', async () => (existsSync(`${providerFile()}.next`) ? undefined : true));
    const after = readPgpass(pgpassFile());
    expect(after.password).not.toBe(before.password);
    expect(after).toEqual({ ...before, user: `beta-guestbook-${credentialTag(after.password)}`, password: after.password });
    expect(readFileSync(providerFile(), 'utf8')).toBe(after.password);
    // beta confirmed by logging in with it: the guestbook said it works with what its password file now says
    expect(readFileSync(`${pgpassFile()}.in-use`, 'utf8')).toBe(`${credentialTag(readFileSync(pgpassFile(), 'utf8'))}\n`);
    // the old login is dropped, its data is not: the row it wrote, and every signature before
    await waitFor('the old login dropped', async () => ((await signatures(before)) === undefined ? true : undefined), 30_000);
    const kept = await asLogin<{ count: string }>(after, "SELECT count(*) AS count FROM signatures WHERE signed_by = 'before the rotation'");
    expect(kept).toEqual({ rows: [{ count: '1' }] });
    expect(await signatures(after)).toBeGreaterThanOrEqual(signedBefore);
    const owner = await asLogin<{ tableowner: string }>(after, "SELECT tableowner FROM pg_tables WHERE tablename = 'signatures'");
    expect(owner).toEqual({ rows: [{ tableowner: 'beta-guestbook/data' }] });
    // the guestbook signs again, with the new login
    const signedAfterRotation = (await signatures(after)) ?? 0;
    await waitFor('the guestbook signing with the new login', async () => ((await signatures(after)) ?? 0) > signedAfterRotation, 60_000);
    // every step once, in order
    expect((await rotationEvents()).filter((e) => e.type.startsWith('secret.rotation')).map((e) => e.type)).toEqual(['secret.rotation-started', 'secret.rotation-made', 'secret.rotation-applied', 'secret.rotation-confirmed', 'secret.rotation-retired']);
    expect(await waitFor('status says version 2, at rest', async () => (await secretStatus(mesh.cliEnv())).find((s) => s.secret === SECRET && s.version === 2 && s.rotation === null))).toBeDefined();
    // the probe logged in with what beta held throughout, and it always got in
    expect(probe.tries).toBeGreaterThan(30);
    expect(probe.refused).toEqual([]);
    expect(readdirSync(join(nodeRoot('alpha'), '.mesh', 'local-postgres', 'consumers')).sort()).toEqual(['beta-guestbook', 'beta-guestbook.in-force']);
    rotated = after;
  }, 240_000);

  it('finds neither credential in a stream or a projection once the rotation has run, and the tags it names them by are not them', async () => {
    const planted = { 'the credential retired': before.password, 'the credential rotated in': rotated.password };
    const names = { prefix: mesh.t.names.prefix, nodes: mesh.t.names.nodesStream, control: mesh.t.names.controlStream };
    const pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 1 });
    try {
      const places = {
        LOG: await storedMessages(mesh.t, mesh.t.names.logStream),
        NODES: await storedMessages(mesh.t, mesh.t.names.nodesStream),
        CONTROL: await storedMessages(mesh.t, mesh.t.names.controlStream),
        EVENTS: await storedMessages(mesh.t, eventsStreamName(names)),
        projections: await projectionRows(pool, mesh.schemas),
        'the files that name them': [readFileSync(`${providerFile()}.in-force`, 'utf8'), readFileSync(`${pgpassFile()}.in-use`, 'utf8')],
      };
      // each place was looked into: the rotation's steps, the secret by name, its marker in the declaration
      expect(places.LOG.join('\n')).toContain('secret.rotation-retired');
      expect(places.NODES.join('\n')).toContain(`\${secret-tag:${SECRET}}`);
      expect(places.projections.some((row) => row.includes(SECRET))).toBe(true);
      expect(plantedFound(places, planted)).toEqual([]);
    } finally {
      await pool.end();
    }
  });
});
