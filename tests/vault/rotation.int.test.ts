import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { stopRecordedProcesses } from '../../src/agent/left-running.js';
import { meshHome } from '../../src/config.js';
import { freePort } from '../../src/dev/ports.js';
import type { StoredMeshEvent } from '../../src/domain/registry.js';
import { runMesh } from '../helpers/cli.js';
import { openControllersMesh, type ControllerProcess } from '../helpers/controller-processes.js';
import { uniqueName } from '../helpers/names.js';
import { nodeAgents, secretStatus } from '../helpers/secret-places.js';
import { waitFor } from '../helpers/test-mesh.js';
import { LOGIN_AND_TOKEN, openTestVault } from '../helpers/vault.js';

// Rotation against the real servers, a `mesh controller` process, a vault and two agents
// (docs/decisions.md, "Rotating a secret"). The provider is a small fixture: an HTTP server on
// alpha that lets in whoever presents the value of any credential file the mesh placed for its
// consumers (`<path>` and `<path>.next`); the consumer on beta presents its own file every 300 ms
// and exits when it is turned away. A probe does what the consumer does, every 100 ms, for the
// whole run: the consumer must never be without a working credential.

const LOGIN = 'test-login/beta-app';
const TOKEN = 'beta-app/token';

const SERVER = `const [dir, port] = process.argv.slice(1); const fs = require('fs');
require('http').createServer((q, r) => { const given = q.headers.authorization || ''; let ok = false;
  try { ok = given !== '' && fs.readdirSync(dir).some((f) => { try { return fs.readFileSync(dir + '/' + f, 'utf8') === given; } catch { return false; } }); } catch {}
  r.statusCode = ok ? 204 : 401; r.end(); }).listen(Number(port), '127.0.0.1');`;
const CLIENT = `const [file, url] = process.argv.slice(1);
const check = () => require('http').get(url, { headers: { authorization: require('fs').readFileSync(file, 'utf8') } }, (res) => { res.resume(); if (res.statusCode === 401) { console.error('turned away'); process.exit(1); } }).on('error', () => undefined);
check(); setInterval(check, 300);`;

describe('rotating a secret over two credentials, against the real servers and agents', () => {
  let mesh: Awaited<ReturnType<typeof openControllersMesh>>;
  let controller: ControllerProcess;
  let vault: ReturnType<typeof openTestVault>;
  let agents: ReturnType<typeof nodeAgents>;
  const root = join(meshHome(), 'tmp', uniqueName('rotation-'));
  const stateOf = (node: string) => join(root, 'agents', node);
  const nodeRoot = (node: string) => join(root, 'nodes', node);
  const consumerFile = () => join(nodeRoot('beta'), '.mesh', 'app', 'secrets', 'db-secret');
  const providerFile = () => join(nodeRoot('alpha'), '.mesh', 'logins', 'consumers', 'beta-app');
  let port = 0;
  let ids = 0;
  const send = async (command: Record<string, unknown>) => {
    const answer = await mesh.send(uniqueName(`cmd-${++ids}`), command);
    if (!answer.ok) throw new Error(JSON.stringify(answer));
    return answer;
  };
  const assign = (module: string, node: string, hold: string[] = []) => send({ type: 'assign', module, node, hold, pins: {}, values: {}, placements: {} });

  // The probe: the consumer's credential, as it stands in its file, presented to the provider.
  const probe = { tries: 0, refused: [] as string[], timer: undefined as NodeJS.Timeout | undefined };
  const present = (value: string): Promise<number> =>
    new Promise((resolve) => {
      const asked = request({ host: '127.0.0.1', port, headers: { authorization: value } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      asked.on('error', () => resolve(0));
      asked.end();
    });
  const startProbe = () => {
    probe.timer = setInterval(() => {
      if (!existsSync(consumerFile())) return;
      const value = readFileSync(consumerFile(), 'utf8');
      void present(value).then((status) => {
        probe.tries++;
        if (status === 401) probe.refused.push(new Date().toISOString());
      });
    }, 100);
  };

  const secretEvents = async (): Promise<StoredMeshEvent[]> => (await mesh.logEvents()).filter((e) => e.aggregate.startsWith('secret.'));
  const eventWhere = (type: string, test: (e: StoredMeshEvent) => boolean = () => true, timeoutMs = 60_000) =>
    waitFor(type, async () => (await secretEvents()).find((e) => e.type === type && test(e)), timeoutMs);
  const forLogin = (e: StoredMeshEvent) => e.aggregate === 'secret.test-login.beta-app';
  const logHead = async () => (await mesh.t.jsm.streams.info(mesh.t.names.logStream)).state.last_seq;

  beforeAll(async () => {
    mkdirSync(root, { recursive: true });
    port = await freePort();
    mesh = await openControllersMesh({ leaseMs: 1_500 });
    controller = await mesh.start();
    agents = nodeAgents(mesh.t, stateOf);
    vault = openTestVault(mesh.t.nc, { prefix: mesh.t.names.prefix, controllerKey: mesh.t.controllerKey.publicKey });
    await send({ type: 'register-module', manifest: { name: 'test-vault', provides: [{ provision: 'secret' }], canHold: ['mesh-vault'], resources: {} } });
    await send({
      type: 'register-module',
      manifest: {
        name: 'logins',
        provides: [{ provision: 'test-login', perConsumerSecret: true, rotation: 'two-credentials', fields: { url: { type: 'url' }, password: { type: 'string', secret: true } }, answers: { url: `http://127.0.0.1:${port}/` } }],
        resources: { processes: [{ name: 'server', run: ['node', '-e', SERVER, join(nodeRoot('alpha'), '.mesh', 'logins', 'consumers'), String(port)] }] },
      },
    });
    await send({
      type: 'register-module',
      manifest: {
        name: 'app',
        requires: LOGIN_AND_TOKEN,
        // the consumer reads its login where the mesh places it (the fixture names the path: a per-consumer secret has no reference of its own)
        resources: { processes: [{ name: 'client', run: ['sh', '-c', 'test -s "$0" && exec node -e "$1" "$2" "$3"', '${token.path}', CLIENT, consumerFile(), '${db.url}'] }] },
      },
    });
    for (const node of ['alpha', 'beta']) await send({ type: 'add-node', node, root: nodeRoot(node), address: '127.0.0.1' });
    await assign('test-vault', 'alpha', ['mesh-vault']);
    await assign('logins', 'alpha');
    await assign('app', 'beta');
    for (const node of ['alpha', 'beta']) await agents.enrol(node);
    for (const node of ['alpha', 'beta']) await agents.start(node);
    await waitFor('the consumer let in', async () => (existsSync(consumerFile()) && (await present(readFileSync(consumerFile(), 'utf8'))) === 204 ? true : undefined), 90_000);
    startProbe();
  }, 180_000);

  afterAll(async () => {
    clearInterval(probe.timer);
    await agents?.stopAll();
    for (const node of ['alpha', 'beta']) stopRecordedProcesses(stateOf(node), 'SIGKILL');
    vault?.remove();
    await mesh?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('keeps the old credential at the provider while a reader is away, waiting on it by name', async () => {
    const before = readFileSync(consumerFile(), 'utf8');
    await agents.stop('beta');
    await send({ type: 'rotate-secret', secret: LOGIN });
    await eventWhere('secret.rotation-applied', forLogin);
    // both credentials in force at the provider: the old one beside the new
    expect(readFileSync(providerFile(), 'utf8')).toBe(before);
    expect(readFileSync(`${providerFile()}.next`, 'utf8')).not.toBe(before);
    const waiting = await waitFor('status names the reader', async () => (await secretStatus(mesh.cliEnv())).find((s) => s.secret === LOGIN && s.rotation?.step === 'reading'));
    expect(waiting).toMatchObject({ version: 1, rotation: { step: 'reading', waitsOn: [{ node: 'beta', module: 'app' }] } });
    const table = await runMesh(['secret', 'status'], mesh.cliEnv());
    expect(table.stdout).toMatch(/test-login\/beta-app +1 +reading v2, waits on beta\/app/);
    // nothing moves on while it is away: the old one is not retired
    await new Promise((r) => setTimeout(r, 2_000));
    expect((await secretEvents()).some((e) => forLogin(e) && e.type === 'secret.rotation-retired')).toBe(false);
    expect(readFileSync(consumerFile(), 'utf8')).toBe(before);
    expect(readFileSync(providerFile(), 'utf8')).toBe(before);
  }, 120_000);

  it('resumes where it was after the controller is killed: the reader returns, confirms, and the old credential is retired', async () => {
    controller.child.kill('SIGKILL');
    await controller.exited;
    controller = await mesh.start();
    await agents.start('beta');
    await eventWhere('secret.rotation-confirmed', forLogin, 90_000);
    const retired = await eventWhere('secret.rotation-retired', forLogin, 90_000);
    expect(retired.data).toEqual({ secret: LOGIN, version: 2, retired: 1 });
    await waitFor('the provider holds the new one alone', async () => (existsSync(`${providerFile()}.next`) ? undefined : true));
    expect(readFileSync(providerFile(), 'utf8')).toBe(readFileSync(consumerFile(), 'utf8'));
    expect(await present(readFileSync(consumerFile(), 'utf8'))).toBe(204);
    // every step once, in order, the last ones stated by the controller that took over
    expect((await secretEvents()).filter((e) => forLogin(e) && e.type !== 'secret.shared').map((e) => e.type)).toEqual(['secret.made', 'secret.rotation-started', 'secret.rotation-made', 'secret.rotation-applied', 'secret.rotation-confirmed', 'secret.rotation-retired']);
    expect(await waitFor('status says version 2, at rest', async () => (await secretStatus(mesh.cliEnv())).find((s) => s.secret === LOGIN && s.version === 2 && s.rotation === null))).toBeDefined();
    // the probe presented the consumer's credential throughout, and it always worked
    expect(probe.tries).toBeGreaterThan(20);
    expect(probe.refused).toEqual([]);
  }, 180_000);

  it('rotates a secret one module holds: staged beside the current value, then made current', async () => {
    const tokenFile = join(nodeRoot('beta'), '.mesh', 'app', 'secrets', 'token');
    const before = readFileSync(tokenFile, 'utf8');
    await send({ type: 'rotate-secret', secret: TOKEN });
    const forToken = (e: StoredMeshEvent) => e.aggregate === 'secret.beta-app.token';
    await eventWhere('secret.rotation-applied', forToken);
    await eventWhere('secret.rotation-retired', forToken);
    await waitFor('the new value current, nothing staged', async () => (!existsSync(`${tokenFile}.next`) && readFileSync(tokenFile, 'utf8') !== before ? true : undefined));
    expect((await secretEvents()).filter(forToken).map((e) => e.type)).toEqual(['secret.made', 'secret.rotation-started', 'secret.rotation-made', 'secret.rotation-applied', 'secret.rotation-retired']);
  }, 120_000);

  it('refuses what it cannot rotate, naming why, and appends nothing', async () => {
    const refusedWith = async (args: string[], code: number): Promise<string> => {
      const head = await logHead();
      const result = await runMesh(args, mesh.cliEnv());
      expect({ code: result.code, head: await logHead() }).toEqual({ code, head });
      return result.stderr;
    };
    expect(await refusedWith(['secret', 'rotate', 'postgres-controller'], 5)).toContain('outside the vault');
    expect(await refusedWith(['secret', 'rotate', LOGIN, '--abandon'], 3)).toContain('no rotation of test-login/beta-app is under way: it is at version 2');
    await agents.stop('beta');
    expect((await runMesh(['secret', 'rotate', LOGIN, '--command-id', uniqueName('rotate')], mesh.cliEnv())).code).toBe(0);
    // settled where it waits for the reader that is away, so nothing else is appended meanwhile
    await eventWhere('secret.rotation-applied', (e) => forLogin(e) && e.type === 'secret.rotation-applied' && e.data.version === 3);
    expect(await refusedWith(['secret', 'rotate', LOGIN], 3)).toContain('a rotation of test-login/beta-app is under way (reading version 3, waiting on beta/app)');
    const head = await logHead();
    const planned = await runMesh(['secret', 'rotate', LOGIN, '--abandon', '--plan', '--json'], mesh.cliEnv());
    expect(planned.code).toBe(0);
    expect((JSON.parse(planned.stdout.trim().split('\n')[0] ?? '{}') as { events: { type: string }[] }).events.map((e) => e.type)).toEqual(['secret.rotation-abandoned']);
    expect(await logHead()).toBe(head);
  }, 120_000);

  it('abandons a rotation before the old credential is retired: its reader goes back first, then the new credential goes; the old one stays current', async () => {
    const before = readFileSync(consumerFile(), 'utf8');
    const abandoned = await runMesh(['secret', 'rotate', LOGIN, '--abandon', '--reason', 'not during the migration'], mesh.cliEnv());
    expect(abandoned.code).toBe(0);
    expect((await eventWhere('secret.rotation-abandoned', forLogin)).data).toEqual({ secret: LOGIN, version: 3, reason: 'not during the migration' });
    // beta was handed version 3 (its agent away, it may hold it when it returns): the provider keeps both until beta runs with version 2 again
    const unwinding = await waitFor('status says it unwinds', async () => (await secretStatus(mesh.cliEnv())).find((s) => s.secret === LOGIN && s.rotation?.step === 'unwinding'));
    expect(unwinding).toMatchObject({ version: 2, rotation: { step: 'unwinding', waitsOn: [{ node: 'beta', module: 'app' }] } });
    expect((await runMesh(['secret', 'status'], mesh.cliEnv())).stdout).toMatch(/test-login\/beta-app +2 +unwinding v3, waits on beta\/app/);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(existsSync(`${providerFile()}.next`)).toBe(true);
    await agents.start('beta');
    expect((await eventWhere('secret.rotation-reverted', forLogin)).data).toMatchObject({ secret: LOGIN, version: 3, node: 'beta', module: 'app' });
    await waitFor('the provider holds the current one alone', async () => (existsSync(`${providerFile()}.next`) ? undefined : true));
    expect(readFileSync(providerFile(), 'utf8')).toBe(before);
    expect(await waitFor('status at rest on version 2', async () => (await secretStatus(mesh.cliEnv())).find((s) => s.secret === LOGIN && s.version === 2 && s.rotation === null))).toBeDefined();
    // its reader, back, runs with version 2 still: the abandoned version 3 went nowhere
    await waitFor('beta running again', async () => ((await present(readFileSync(consumerFile(), 'utf8'))) === 204 ? true : undefined));
    expect(readFileSync(consumerFile(), 'utf8')).toBe(before);
    expect(probe.refused).toEqual([]);
  }, 120_000);
  it('gives up a rotation whose reader is unassigned mid-way, naming it, and ends it at once: nobody is left to go back', async () => {
    // the reader away, so the rotation waits on it rather than finishing before it is unassigned
    await agents.stop('beta');
    await send({ type: 'rotate-secret', secret: LOGIN });
    await eventWhere('secret.rotation-applied', (e) => forLogin(e) && e.type === 'secret.rotation-applied' && e.data.version === 4);
    await send({ type: 'unassign', module: 'app', node: 'beta' });
    const reason = 'beta/app is no longer assigned where the rotation found it';
    const given = await waitFor('the rotation given up', async () => {
      const abandoned = (await secretEvents()).flatMap((e) => (forLogin(e) && e.type === 'secret.rotation-abandoned' && e.data.version === 4 ? [e] : []));
      return abandoned.length === 2 ? abandoned : undefined;
    });
    expect(given.map((e) => [e.data, e.actor])).toEqual([
      [{ secret: LOGIN, version: 4, reason }, 'controller'],
      [{ secret: LOGIN, version: 4, reason }, 'controller'],
    ]);
    expect(await waitFor('status at rest on version 2', async () => (await secretStatus(mesh.cliEnv())).find((s) => s.secret === LOGIN && s.version === 2 && s.rotation === null))).toBeDefined();
  }, 120_000);
});
