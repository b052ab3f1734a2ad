import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import type { FastifyInstance } from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { meshHome } from '../../src/config.js';
import { CommandDispatcher } from '../../src/controller/command-dispatcher.js';
import { DeclarationPublisher } from '../../src/controller/declaration-publisher.js';
import { buildApp } from '../../src/controller/http/app.js';
import { CONSOLE_CSP } from '../../src/controller/http/console/routes.js';
import { overviewSource } from '../../src/controller/http/overview-source.js';
import { MeshService } from '../../src/controller/mesh-service.js';
import { meshEventRegistry } from '../../src/domain/registry.js';
import { meshProjections } from '../../src/projections/catalogue.js';
import { CommitReader } from '../../src/projections/commit-reader.js';
import { projectionsStatus } from '../../src/projections/status.js';
import { runMesh } from '../helpers/cli.js';
import { testConsoleSource } from '../helpers/console.js';
import { testDatabaseUrl } from '../helpers/database.js';
import { fixtureManifest } from '../helpers/given.js';
import { uniqueName } from '../helpers/names.js';
import { openTestMesh, type TestMesh } from '../helpers/test-mesh.js';
import { launchChromium } from '../demo/browser.js';
import { dropSchemas, freshSchemas, openPool, waitServingAt } from '../projections/harness.js';

// The console in a real Chromium, against a controller deciding commands that `mesh` sends: every
// page loads with no error and no Content-Security-Policy violation, its links lead from the
// overview to a node, its module and a seat, a change made with the CLI shows on the open page
// without a reload, and markup in what the mesh holds is shown as text. Screenshots of each page
// go to .mesh/test-output/console-*.png.

const OUTPUT = join(meshHome(), 'test-output');
/** What a module's description may hold: shown as text, it runs nothing. */
const MARKUP = '<img src=x onerror="globalThis.pwned=1"><script>globalThis.pwned=2</script><b>bold?</b>';

describe('the console', () => {
  let t: TestMesh;
  let env: Record<string, string>;
  let app: FastifyInstance;
  let base: string;
  let browser: Browser;
  let pool: pg.Pool;
  const owner = openPool();
  const schemas = freshSchemas();
  const [lab, other, marked] = [uniqueName('lab-'), uniqueName('other-'), uniqueName('marked-')];
  const mesh = (...args: string[]) => runMesh(args, env);

  /** A page that records what went wrong in it: console errors, uncaught errors, CSP violations. */
  const openPage = async (): Promise<{ page: Page; errors: string[]; violations: () => Promise<string[]> }> => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const errors: string[] = [];
    page.on('console', (message) => void (message.type() === 'error' && errors.push(message.text())));
    page.on('pageerror', (error) => void errors.push(error.message));
    // Injected by the browser itself, so the page's own policy does not stop it listening.
    await page.addInitScript(() => {
      const seen: string[] = [];
      Object.assign(globalThis, { cspViolations: seen });
      document.addEventListener('securitypolicyviolation', (event) => void seen.push(`${event.violatedDirective} ${event.blockedURI}`));
    });
    return { page, errors, violations: () => page.evaluate(() => (globalThis as unknown as { cspViolations: string[] }).cspViolations) };
  };

  beforeAll(async () => {
    t = await openTestMesh();
    env = await t.startControlPlane(schemas);
    for (const module of ['local-bus', 'greeter', 'caller']) await t.run({ type: 'register-module', manifest: fixtureManifest(module) });
    await t.run({ type: 'register-module', manifest: { ...fixtureManifest('caller'), name: marked, description: MARKUP } });
    for (const node of [lab, other]) await t.run({ type: 'add-node', node });
    const assign = (module: string, node: string, hold: string[] = []) => t.run({ type: 'assign', module, node, hold, pins: {}, values: {}, placements: {} });
    await assign('local-bus', other, ['mesh-broker']);
    await assign('greeter', lab, ['front-desk']);

    pool = new pg.Pool({ connectionString: testDatabaseUrl('controller'), max: 4 });
    const commits = new CommitReader(t.nc, { stream: t.names.logStream, subjectPrefix: t.names.logPrefix, registry: meshEventRegistry() });
    const projections = () => projectionsStatus(pool, schemas, commits, meshProjections());
    const head = (await commits.head()).seq;
    for (const projection of meshProjections()) await waitServingAt(owner, schemas, projection.name, head);
    app = buildApp({
      console: testConsoleSource(t, { pool, schemas, projections }),
      overview: overviewSource({ mesh: new MeshService(t.newLog()), publisher: new DeclarationPublisher(t.nc, { nodesStream: t.names.nodesStream, prefix: t.names.prefix }), pool, statusSchema: `status_${t.names.prefix}`, heartbeatThresholdMs: 15_000 }),
      onFact: () => () => undefined,
      recentFacts: () => [],
      dispatcher: new CommandDispatcher(new MeshService(t.newLog())),
      logger: pino({ level: 'silent' }),
    });
    base = await app.listen({ host: '127.0.0.1', port: 0 });
    browser = await launchChromium((line) => process.stderr.write(`${line}\n`));
    mkdirSync(OUTPUT, { recursive: true });
  }, 180_000);

  afterAll(async () => {
    await browser?.close().catch(() => undefined);
    await app?.close();
    await pool?.end();
    await t?.close();
    await dropSchemas(owner, schemas);
    await owner.end();
  });

  it('loads every page with status 200, no error and no policy violation, and serves each under the policy', async () => {
    const pages: [string, string, string][] = [
      ['overview', '/', '#verdict'],
      ['node', `/nodes/${lab}`, '#runs'],
      ['module', '/modules/greeter', '#versions'],
      ['seat', '/seats/front-desk', '#holder'],
      ['catalogue', '/catalogue', '#catalogue'],
      ['projections', '/projections', '#projections-table'],
      ['log', '/log', '#log'],
      ['log-filtered', `/log?aggregate=node&type=node.added`, '#log'],
    ];
    for (const [name, path, part] of pages) {
      const { page, errors, violations } = await openPage();
      const response = await page.goto(`${base}${path}`);
      expect({ path, status: response?.status() }).toEqual({ path, status: 200 });
      expect(response?.headers()['content-security-policy']).toBe(CONSOLE_CSP);
      await page.locator(part).first().waitFor();
      // One round of the live part: htmx asked again and swapped it in.
      await page.waitForResponse((r) => r.url() === `${base}${path}` && r.request().headers()['hx-request'] === 'true', { timeout: 10_000 });
      await page.screenshot({ path: join(OUTPUT, `console-${name}.png`), fullPage: true });
      expect({ path, errors, violations: await violations() }).toEqual({ path, errors: [], violations: [] });
      await page.close();
    }
  }, 180_000);

  it('shows what the CLI shows: the node runs and holds what it was told, its declaration; the log is filtered as mesh log filters it', async () => {
    const { page } = await openPage();
    await page.goto(`${base}/nodes/${lab}`);
    await expect(page.locator('#runs tbody tr').first().innerText()).resolves.toMatch(/^greeter\s+definition v1/);
    await expect(page.locator('#seats').innerText()).resolves.toBe('front-desk (by greeter)');
    await expect(page.locator('#declaration').innerText()).resolves.toContain('greeter');
    await expect(page.locator('#history').innerText()).resolves.toContain('assignment.created');

    // The same filters, the same events: the page's sequences are those `mesh log --json` prints.
    const cli = (await mesh('log', '--aggregate', `node.${lab}`, '--json')).stdout.trim().split('\n').map((line) => (JSON.parse(line) as { seq: number }).seq);
    await page.goto(`${base}/log?aggregate=${encodeURIComponent(`node.${lab}`)}`);
    const shown = await page.locator('#log tbody tr td:first-child').allInnerTexts();
    expect(shown.map(Number)).toEqual(cli);
    // A filter the CLI refuses is refused here in its words.
    const refused = await mesh('log', '--after', 'yesterday');
    expect(refused.code).toBe(2);
    const answer = await page.goto(`${base}/log?after=yesterday`);
    expect(answer?.status()).toBe(400);
    expect(refused.stderr).toContain(await page.locator('#refusal').innerText());
    await page.close();
  }, 120_000);

  it('leads by its links from the overview to a node, to its module, to a seat, to its holder', async () => {
    const { page, errors } = await openPage();
    await page.goto(`${base}/`);
    await page.locator('#nodes a.node', { hasText: lab }).click();
    await page.waitForURL(`${base}/nodes/${lab}`);
    await page.locator('#runs a.module', { hasText: 'greeter' }).click();
    await page.waitForURL(`${base}/modules/greeter`);
    await expect(page.locator('#runs-on').innerText()).resolves.toBe(lab);
    await expect(page.locator('#definitions tbody tr').first().innerText()).resolves.toMatch(/^v1\s+\d+/);
    await page.locator('#contract a.seat', { hasText: 'front-desk' }).first().click();
    await page.waitForURL(`${base}/seats/front-desk`);
    await expect(page.locator('#holder').innerText()).resolves.toBe(`${lab}/greeter`);
    await page.locator('#holder a.node').click();
    await page.waitForURL(`${base}/nodes/${lab}`);
    await page.locator('nav a', { hasText: 'catalogue' }).click();
    await page.locator('#catalogue a.module', { hasText: marked }).click();
    await page.waitForURL(`${base}/modules/${marked}`);
    expect(errors).toEqual([]);
    await page.close();
  }, 120_000);

  it('shows a change made with the CLI on the open page, without a reload', async () => {
    const { page, errors } = await openPage();
    // The overview and the log, open beside the node's page.
    const overview = await openPage();
    await overview.page.goto(`${base}/`);
    const log = await openPage();
    await log.page.goto(`${base}/log?type=node.cordoned`);
    await page.goto(`${base}/nodes/${lab}`);
    expect(await page.locator('#cordoned').count()).toBe(0);
    // Marks this page load: what appears while the mark stays came through the live part.
    await page.evaluate(() => Object.assign(globalThis, { loadedOnce: true }));
    const assigned = await mesh('assign', marked, lab);
    expect({ code: assigned.code, stderr: assigned.stderr }).toMatchObject({ code: 0 });
    await page.locator('#runs a.module', { hasText: marked }).waitFor({ timeout: 30_000 });
    expect((await mesh('node', 'cordon', lab)).code).toBe(0);
    await page.locator('#cordoned').waitFor({ timeout: 30_000 });
    await expect(page.locator('#history').innerText()).resolves.toContain('node.cordoned');
    expect(await page.evaluate(() => (globalThis as { loadedOnce?: boolean }).loadedOnce)).toBe(true);
    await page.screenshot({ path: join(OUTPUT, 'console-node-live.png'), fullPage: true });
    await overview.page.locator('#nodes tbody tr', { hasText: lab }).locator('.tag', { hasText: 'cordoned' }).waitFor({ timeout: 30_000 });
    await log.page.locator('#log tbody tr', { hasText: `node.${lab}` }).waitFor({ timeout: 30_000 });
    await log.page.screenshot({ path: join(OUTPUT, 'console-log-live.png'), fullPage: true });
    expect({ node: errors, overview: overview.errors, log: log.errors }).toEqual({ node: [], overview: [], log: [] });
    for (const open of [page, overview.page, log.page]) await open.close();
  }, 120_000);

  it('shows markup held by the mesh as text, and a name with markup asked for as text', async () => {
    const { page, errors, violations } = await openPage();
    await page.goto(`${base}/modules/${marked}`);
    await expect(page.locator('#description').innerText()).resolves.toBe(MARKUP);
    expect(await page.locator('#description img, #description script, #description b').count()).toBe(0);
    await expect(page.locator('#manifest').innerText()).resolves.toContain('onerror=\\"globalThis.pwned=1\\"');

    expect({ errors, violations: await violations() }).toEqual({ errors: [], violations: [] });

    const name = '<img src=x onerror="globalThis.pwned=3">';
    const response = await page.goto(`${base}/modules/${encodeURIComponent(name)}`);
    expect(response?.status()).toBe(404);
    await expect(page.locator('#not-found').innerText()).resolves.toBe(`No module ${name} is registered.`);
    expect(await page.locator('img').count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as { pwned?: number }).pwned)).toBeUndefined();
    // The browser says the page answered 404; nothing else went wrong.
    expect({ errors, violations: await violations() }).toEqual({ errors: ['Failed to load resource: the server responded with a status of 404 (Not Found)'], violations: [] });
    await page.close();
  }, 60_000);
});
