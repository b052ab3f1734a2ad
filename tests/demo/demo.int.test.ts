import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import pg from 'pg';
import { meshHome } from '../../src/config.js';
import { credentialTag } from '../../src/domain/secrets/credential-tag.js';
import { readPgpass } from '../../src/modules/postgres/guestbook.js';
import { freePort } from '../../src/dev/ports.js';
import { runMesh, runProbe } from '../helpers/cli.js';
import { uniqueName } from '../helpers/names.js';
import { waitFor } from '../helpers/test-mesh.js';
import { launchChromium } from './browser.js';
import { listeners, LOOPBACK_HEX, processesNaming } from './processes.js';

// `npm start`'s command, `mesh dev up --demo`, from a clean folder on ports of this file's own:
// the whole mesh raised once, its modules asked over HTTP, `mesh status`, the page in a real
// Chromium watching a fact arrive after a command, and `mesh dev down` leaving nothing behind.

const OUTPUT = join(meshHome(), 'test-output');
const GREETING = 'hello from alpha, through the mesh';

/** Distinct free loopback ports: the kernel may hand the same one out twice in a row. */
const freePorts = async (count: number): Promise<number[]> => {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
};

const httpText = async (url: string): Promise<string | undefined> => {
  try {
    const response = await fetch(url);
    return response.ok ? await response.text() : undefined;
  } catch {
    return undefined;
  }
};

describe("npm start's mesh, raised from a clean folder", () => {
  const dir = join(meshHome(), 'tmp', uniqueName('demo-'));
  const timings: Record<string, number> = {};
  let ports: { nats: number; postgres: number; http: number; greeter: number; caller: number; second: number; providerPostgres: number };
  let env: Record<string, string | undefined>;
  let browser: Browser | undefined;
  let page: Page | undefined;
  let consoleToken: string | undefined;
  const pageUrl = () => `http://127.0.0.1:${ports.http}/`;
  const mesh = (args: string[], timeoutMs = 60_000) => runMesh(args, env, timeoutMs);
  const timed = async <T>(what: string, work: () => Promise<T>): Promise<T> => {
    const started = Date.now();
    try {
      return await work();
    } finally {
      timings[what] = Date.now() - started;
    }
  };

  beforeAll(async () => {
    const [nats, postgres, http, greeter, caller, second, providerPostgres] = await freePorts(7);
    ports = { nats: nats!, postgres: postgres!, http: http!, greeter: greeter!, caller: caller!, second: second!, providerPostgres: providerPostgres! };
    // Every MESH_ variable of this process (the shared test stack's) is dropped: the verbs must
    // find this stack from its folder alone, as they do after `npm start`.
    env = Object.fromEntries(Object.keys(process.env).filter((k) => k.startsWith('MESH_')).map((k) => [k, undefined]));
    Object.assign(env, {
      MESH_DEV_DIR: dir,
      MESH_DEV_NATS_PORT: String(ports.nats),
      MESH_DEV_PG_PORT: String(ports.postgres),
      MESH_DEV_HTTP_PORT: String(ports.http),
      MESH_DEMO_GREETER_PORT: String(ports.greeter),
      MESH_DEMO_CALLER_PORT: String(ports.caller),
      MESH_DEMO_POSTGRES_PORT: String(ports.providerPostgres),
      // The console asks for an operator's session on loopback too, so the page below is opened as
      // an operator does (`mesh console open`) and the probe can try a read without one.
      MESH_CONSOLE_AUTH: 'required',
    });
    mkdirSync(OUTPUT, { recursive: true });
  }, 30_000);

  afterAll(async () => {
    await browser?.close().catch(() => undefined);
    await mesh(['dev', 'down'], 120_000).catch(() => undefined);
    // Whatever `down` missed is still ours (it names our folder or ports): it must not outlive the file.
    for (const left of processesNaming(dir, Object.values(ports))) {
      try {
        process.kill(left.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    writeFileSync(join(OUTPUT, 'demo-timings.json'), `${JSON.stringify(timings, null, 2)}\n`);
    rmSync(dir, { recursive: true, force: true });
  }, 180_000);

  it('raises the whole mesh and says it does what it was told', async () => {
    const up = await timed('up --demo, to healthy', () => mesh(['dev', 'up', '--demo'], 240_000));
    expect({ code: up.code, stdout: up.stdout }).toMatchObject({ code: 0, stdout: expect.stringContaining('the mesh is up, and doing what it was told.') });
    expect(up.stdout).toContain(`the page:     ${pageUrl()}`);
    expect(up.stdout).toContain(`the greeter:  http://127.0.0.1:${ports.greeter}/`);
    expect(up.stdout).toContain(`the caller:   http://127.0.0.1:${ports.caller}/`);
    expect(up.stderr).toContain('agent for node alpha started');
    expect(up.stderr).toContain('assigned caller to beta');
    expect(up.stderr).toContain('assigned local-vault to alpha, holding mesh-vault');
    expect(up.stdout).toContain(`the guestbook on beta signs in PostgreSQL on alpha (127.0.0.1:${ports.providerPostgres})`);
  }, 300_000);

  it("answers HTTP through the mesh: the caller returns the greeter's greeting", async () => {
    // Healthy says each process runs; one started under load may take a moment more to listen.
    expect(await waitFor('the greeter to answer', () => httpText(`http://127.0.0.1:${ports.greeter}/`), 20_000)).toBe(`${GREETING}\n`);
    expect(await waitFor('the caller to answer', () => httpText(`http://127.0.0.1:${ports.caller}/`), 20_000)).toBe(`the greeter says: ${GREETING}\n`);
  });

  it('signs the guestbook on beta in PostgreSQL on alpha, with the login the vault made for it', async () => {
    const login = readPgpass(join(dir, 'nodes', 'beta', 'guestbook', 'data', 'pgpass'));
    // the login named for the credential it holds (docs/decisions.md, "Rotating the PostgreSQL provider's logins")
    expect(login).toMatchObject({ host: '127.0.0.1', port: ports.providerPostgres, database: 'beta-guestbook', user: `beta-guestbook-${credentialTag(login.password)}` });
    const signed = await waitFor('the guestbook signed', async () => {
      const client = new pg.Client({ ...login, connectionTimeoutMillis: 5_000 });
      client.on('error', () => undefined);
      try {
        await client.connect();
        const { rows } = await client.query<{ count: string }>('SELECT count(*) AS count FROM signatures');
        return Number(rows[0]?.count) > 0;
      } catch {
        return false;
      } finally {
        await client.end().catch(() => undefined);
      }
    }, 30_000);
    expect(signed).toBe(true);
  });

  it('mesh status exits zero', async () => {
    const status = await timed('mesh status', () => mesh(['status']));
    expect({ code: status.code, stdout: status.stdout, stderr: status.stderr }).toMatchObject({ code: 0 });
    expect(status.stdout).toMatch(/^ {2}alpha\s+enrolled\s+ready\s+greeter, local-bus, local-postgres, local-vault$/m);
    expect(status.stdout).toMatch(/^ {2}beta\s+enrolled\s+ready\s+caller, guestbook$/m);
    expect(status.stdout).toContain('the mesh is doing what it was told');
  });

  it('hands the mesh’s own first secrets to the vault on alpha, and names them without their values', async () => {
    const own = await timed('the mesh’s own secrets handed to the vault', () =>
      waitFor('the vault to keep the mesh’s own secrets', async () => {
        const read = JSON.parse((await mesh(['secret', 'status', '--json'])).stdout || '[]') as { secret: string; origin: string; inVault: boolean; handedOver?: unknown }[];
        const genesis = read.filter((s) => s.origin === 'genesis');
        return genesis.length === 4 && genesis.every((s) => s.inVault) ? genesis : undefined;
      }, 60_000),
    );
    expect(own.map((s) => [s.secret, s.handedOver])).toEqual(['admin', 'controller', 'projector', 'reader'].map((owner) => [`mesh/postgres-${owner}`, { node: 'alpha', module: 'local-vault' }]));
    const reader = readFileSync(join(dir, 'secrets', 'postgres-reader.password'), 'utf8').trim();
    expect((await mesh(['log', '--json'])).stdout).not.toContain(reader);
  });

  it('says the mesh is already up when raised again, and raises nothing new', async () => {
    const before = processesNaming(dir, Object.values(ports)).map((p) => p.pid).sort();
    const again = await timed('up --demo again', () => mesh(['dev', 'up', '--demo'], 120_000));
    expect({ code: again.code, stdout: again.stdout }).toMatchObject({ code: 0, stdout: expect.stringContaining('the mesh was already up; nothing new was raised.') });
    expect(again.stdout).toContain(`the caller:   http://127.0.0.1:${ports.caller}/`);
    expect(again.stderr).toContain('controller already running');
    expect(processesNaming(dir, Object.values(ports)).map((p) => p.pid).sort()).toEqual(before);
  }, 150_000);

  it('serves the page on loopback only', () => {
    // The variable that would widen it is not set (beforeAll drops every MESH_ variable).
    const http = listeners([ports.http]);
    expect(http.length).toBeGreaterThan(0);
    expect(http.filter((l) => l.family !== 'tcp' || l.address !== LOOPBACK_HEX)).toEqual([]);
  });

  it('shows the mesh in Chromium: the verdict, the nodes with what they run and hold, the seats', async () => {
    browser = await timed('chromium launch', () => launchChromium((line) => process.stderr.write(`${line}\n`)));
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const methods = new Set<string>();
    page.on('request', (request) => methods.add(request.method()));
    const session = JSON.parse((await mesh(['console', 'open', '--json'])).stdout || '{}') as { url?: string; token?: string };
    expect(session.url).toMatch(new RegExp(`^${pageUrl()}session/`));
    consoleToken = session.token;
    expect(await fetch(`${pageUrl()}api/overview`).then((r) => r.status)).toBe(401);
    await timed('page to healthy verdict', async () => {
      // The one-time address holds the session in a cookie and leads to the overview.
      await page!.goto(session.url!);
      expect(page!.url()).toBe(pageUrl());
      await page!.locator('#verdict.healthy').waitFor({ timeout: 60_000 });
    });
    expect(await page.locator('#verdict').innerText()).toContain('The mesh is doing what it was told.');
    expect(await page.locator('#verdict').innerText()).toContain('2 nodes heard from, 6 modules running as declared.');
    // The projections are judged too: the green verdict covers them, and the page says so.
    expect(await page.locator('#projections').innerText()).toMatch(/^Projections: all \d+ caught up with the log\.$/);

    const alpha = page.locator('#nodes tbody tr', { hasText: 'alpha' });
    await expect(alpha.locator('td').nth(3).innerText()).resolves.toBe('greeter, local-bus, local-postgres, local-vault');
    await expect(alpha.locator('td').nth(4).innerText()).resolves.toBe('greeter, local-bus, local-postgres, local-vault');
    await expect(alpha.locator('td').nth(5).innerText()).resolves.toBe('front-desk, mesh-broker, mesh-vault');
    const beta = page.locator('#nodes tbody tr', { hasText: 'beta' });
    await expect(beta.locator('td').nth(4).innerText()).resolves.toBe('caller, guestbook');
    await expect(beta.locator('td').nth(5).innerText()).resolves.toBe('none');
    await expect(alpha.locator('td').nth(2).innerText()).resolves.toMatch(/^the newest \(#\d+\)$/);

    const holder = async (seat: string) => page!.locator('#seats tbody tr').filter({ has: page!.locator('td:first-child', { hasText: new RegExp(`^${seat}$`) }) }).locator('td').nth(3).innerText();
    await expect(holder('front-desk')).resolves.toBe('alpha/greeter');
    await expect(holder('mesh-broker')).resolves.toBe('alpha/local-bus');
    await expect(holder('mesh-vault')).resolves.toBe('alpha/local-vault');
    await expect(holder('mesh-git')).resolves.toBe('unheld');
    expect(await page.locator('#seat-summary').innerText()).toMatch(/^3 of \d+ seats held\./);
    // What the agents stated when they applied, from the log.
    await page.locator('#facts li', { hasText: 'beta/caller now runs' }).waitFor({ timeout: 30_000 });
    await page.locator('#live-note', { hasText: 'live: a new fact shows here' }).waitFor({ timeout: 30_000 });
    // Read-only: the page only ever asks.
    expect([...methods]).toEqual(['GET']);
  }, 120_000);

  it('shows a fact arriving live after a command, and never a secret', async () => {
    if (!page) throw new Error('the page did not load (see the test above)');
    // Marks this page load: a fact that appears while the mark stays came over the live stream.
    await page.evaluate(() => Object.assign(globalThis, { loadedOnce: true }));
    const assign = await mesh(['assign', 'greeter', 'beta', '--set', `port=${ports.second}`, '--set', 'greeting=hello from beta']);
    expect({ code: assign.code, stderr: assign.stderr }).toMatchObject({ code: 0 });
    await timed('fact on the page after assign', () => page!.locator('#facts li', { hasText: 'beta/greeter now runs' }).waitFor({ timeout: 60_000 }));
    expect(await page.evaluate(() => (globalThis as { loadedOnce?: boolean }).loadedOnce)).toBe(true);
    await waitFor('the second greeter to answer', () => httpText(`http://127.0.0.1:${ports.second}/`), 60_000);
    await page.locator('#verdict.healthy').waitFor({ timeout: 60_000 });
    await waitFor('beta to show the greeter it now runs', async () => (await page!.locator('#nodes tbody tr', { hasText: 'beta' }).locator('td').nth(4).innerText()) === 'caller, greeter, guestbook', 30_000);
    await page.screenshot({ path: join(OUTPUT, 'page.png'), fullPage: true });

    const shown = `${await page.content()}\n${JSON.stringify(await (await fetch(`${pageUrl()}api/overview`, { headers: { authorization: `Bearer ${consoleToken}` } })).json())}`;
    const key = JSON.parse(readFileSync(join(dir, 'operator.key'), 'utf8')) as { secretKey: string };
    expect(shown).not.toContain(key.secretKey);
    expect(shown).not.toContain(key.secretKey.slice(0, 16));
    expect(shown).not.toContain(readPgpass(join(dir, 'nodes', 'beta', 'guestbook', 'data', 'pgpass')).password);
  }, 180_000);

  it('refuses every attack of `npm run probe:security` but the aims still open, and prints its summary', async () => {
    await browser?.close();
    browser = undefined;
    // The probe as an operator runs it after `npm start`: it finds the stack from its folder alone.
    const probe = await timed('security probe', () => runProbe(env, 240_000));
    const summary = probe.stdout.split('\n').find((line) => /^\d+ attacks: /.test(line)) ?? '(no summary line)';
    process.stderr.write(`probe:security against the demo mesh: ${summary}\n`);
    const outcomes = probe.stdout.split('\n').filter((line) => /^(ALLOWED|NOT TRIED)/.test(line));
    // Still open, and named as such (docs/decisions.md, "Reading the bus needs a reason"): nats-server
    // 2.9 lets an identity that may ask the JetStream API aim the answer, or a push consumer's
    // deliveries, at any subject. What lands on a node's subject is no declaration the controller
    // signed, and the node applies none of it (tests/security/declaration-signature.int.test.ts);
    // closing the aim itself needs the streams in an account of their own.
    const STILL_OPEN = [
      'ALLOWED   operator root makes a push consumer on LOG delivering to mesh.node.beta.declare',
      'ALLOWED   operator root asks the JetStream API with mesh.node.beta.declare as the reply',
    ];
    expect({ code: probe.code, outcomes, stderr: probe.stderr.slice(-2_000) }).toEqual({ code: 1, outcomes: STILL_OPEN, stderr: expect.any(String) });
    expect(summary).toMatch(new RegExp(`^\\d+ attacks: \\d+ refused, ${STILL_OPEN.length} let through, 0 not tried$`));
  }, 300_000);

  it('mesh dev down leaves no process of ours running', async () => {
    await browser?.close();
    browser = undefined;
    const down = await timed('dev down', () => mesh(['dev', 'down'], 120_000));
    expect({ code: down.code, stderr: down.stderr }).toMatchObject({ code: 0, stderr: expect.stringContaining('nats-server stopped') });
    expect(down.stderr).toContain('PostgreSQL stopped');
    // Processes already signalled may take a moment to be gone; none may stay.
    await waitFor('every process of ours to exit', async () => processesNaming(dir, Object.values(ports)).length === 0 && listeners(Object.values(ports)).length === 0, 30_000).catch(() => undefined);
    expect(processesNaming(dir, Object.values(ports))).toEqual([]);
    expect(listeners(Object.values(ports))).toEqual([]);
    process.stderr.write(`demo timings (ms): ${JSON.stringify(timings)}\n`);
  }, 150_000);
});
