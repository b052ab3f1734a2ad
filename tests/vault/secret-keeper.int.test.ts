import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { MeshService } from '../../src/controller/mesh-service.js';
import { MeshView } from '../../src/controller/mesh-view.js';
import { SecretKeeper } from '../../src/controller/secret-keeper.js';
import { tokenVerifier } from '../../src/domain/nodes/enrolment.js';
import { secretNamed } from '../../src/domain/secrets/state.js';
import type { StoredMeshEvent } from '../../src/domain/registry.js';
import { fixtureManifest } from '../helpers/given.js';
import { openTestMesh, waitFor, type TestMesh } from '../helpers/test-mesh.js';
import { fetchAs, openTestVault, testNode, type TestNode } from '../helpers/vault.js';

// The controller's side: every secret the assignments name is made by the vault, told who may
// have it by the keys each node enrolled with, and recorded in the log — name, purpose,
// recipients, version — once the vault has answered. A vault that is not up yet is asked again.
// A provider's per-consumer secret goes to the consumer's node and to the provider's.

// Stopped in the order they were started: the keeper before the view it reads, both before the mesh.
const closeKeeperMesh = async (t: TestMesh, view: MeshView | undefined, keeper: SecretKeeper | undefined, vault?: ReturnType<typeof openTestVault>) => {
  await keeper?.stop();
  await view?.stop();
  vault?.remove();
  await t.close();
};
const assignHolding = (t: TestMesh, module: string, node: string, hold: string[]) => t.run({ type: 'assign', module, node, hold, pins: {}, values: {}, placements: {} });
// One node holding the broker, the vault and a store whose superuser is a secret.
const openAlphaWithStore = async (): Promise<TestMesh> => {
  const t = await openTestMesh();
  for (const name of ['local-bus', 'vault', 'postgres']) await t.run({ type: 'register-module', manifest: fixtureManifest(name) });
  await t.run({ type: 'add-node', node: 'alpha' });
  await assignHolding(t, 'local-bus', 'alpha', ['mesh-broker']);
  await assignHolding(t, 'vault', 'alpha', ['mesh-vault']);
  await assignHolding(t, 'postgres', 'alpha', ['mesh-store']);
  return t;
};

describe('the secrets the assignments name', () => {
  let t: TestMesh;
  let view: MeshView;
  let keeper: SecretKeeper;
  let vault: ReturnType<typeof openTestVault> | undefined;
  const alpha = testNode('alpha');
  const beta = testNode('beta');

  const enrol = async (node: TestNode) => {
    const tokenId = randomBytes(8).toString('hex');
    await t.run({ type: 'issue-enrolment-token', tokenId, verifier: tokenVerifier('s'), node: node.name, expiresAt: new Date(Date.now() + 3_600_000).toISOString() });
    await t.run({ type: 'enrol-node', node: node.name, tokenId, secret: 's', publicKey: node.sealing.publicKey, busKey: node.host.publicKey, now: new Date().toISOString() });
  };
  const secretEvents = async (): Promise<StoredMeshEvent[]> => {
    const events: StoredMeshEvent[] = [];
    for await (const event of t.log.read()) if (event.type.startsWith('secret.')) events.push(event);
    return events;
  };

  beforeAll(async () => {
    t = await openTestMesh();
    for (const name of ['local-bus', 'vault', 'postgres', 'gitea']) await t.run({ type: 'register-module', manifest: fixtureManifest(name) });
    for (const node of ['alpha', 'beta']) await t.run({ type: 'add-node', node });
    const assign = (module: string, node: string, hold: string[]) => assignHolding(t, module, node, hold);
    await assign('local-bus', 'alpha', ['mesh-broker']);
    await assign('vault', 'alpha', ['mesh-vault']);
    await assign('postgres', 'alpha', ['mesh-store']);
    await assign('gitea', 'beta', ['mesh-git']);
    await enrol(alpha);
    view = new MeshView(t.newLog(), { logger: pino({ level: 'silent' }) });
    view.start();
    keeper = new SecretKeeper(t.nc, view, new MeshService(t.newLog(), {}, view), { prefix: t.names.prefix, controller: t.controllerKey, actor: 'controller', logger: pino({ level: 'silent' }), retryMs: { first: 100, most: 500 } });
    keeper.start();
  });
  afterAll(() => closeKeeperMesh(t, view, keeper, vault));

  it('records nothing while no vault answers, then each secret once the vault has made it', async () => {
    await new Promise((r) => setTimeout(r, 500));
    expect(await secretEvents()).toEqual([]);
    vault = openTestVault(t.nc, { prefix: t.names.prefix, controllerKey: t.controllerKey.publicKey });
    const made = await waitFor('both secrets recorded', async () => ((await secretEvents()).length === 2 ? secretEvents() : undefined));
    expect(made.map((e) => e.data).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))).toEqual([
      { secret: 'alpha-postgres/superuser', purpose: 'superuser of alpha/postgres', recipients: ['alpha'], version: 1 },
      { secret: 'postgres-database/beta-gitea', purpose: 'the postgres-database login of beta/gitea at alpha/postgres', recipients: ['alpha', 'beta'], version: 1 },
    ]);
    expect(made.map((e) => e.actor)).toEqual(['controller', 'controller']);
  });

  it('hands a per-consumer secret to the provider’s node and, once it has enrolled, the consumer’s', async () => {
    const atProvider = await fetchAs(t.nc, t.names.prefix, alpha, 'postgres-database/beta-gitea');
    // beta is named but has no keys in the log yet: the vault cannot know it
    await expect(fetchAs(t.nc, t.names.prefix, beta, 'postgres-database/beta-gitea')).rejects.toMatchObject({ problems: [expect.objectContaining({ why: expect.stringContaining('node beta is not a recipient') })] });
    await enrol(beta);
    const atConsumer = await waitFor('beta served', async () => fetchAs(t.nc, t.names.prefix, beta, 'postgres-database/beta-gitea').catch(() => undefined));
    expect(atConsumer).toEqual(atProvider);
    // the provider's superuser goes to its own node alone
    await expect(fetchAs(t.nc, t.names.prefix, beta, 'alpha-postgres/superuser')).rejects.toMatchObject({ problems: [expect.objectContaining({ why: expect.stringContaining('node beta is not a recipient') })] });
    // the log changed nothing for it: the names were recorded already, the keys are the vault's business
    expect((await secretEvents()).length).toBe(2);
  });
});

// A vault that does not answer is asked again on the keeper's backoff, not on every commit: a
// busy mesh with its vault down would otherwise ask it, and log that it did not answer, once per
// commit for every secret it wants.
describe('a vault that does not answer, on a busy log', () => {
  let t: TestMesh;
  let view: MeshView;
  let keeper: SecretKeeper | undefined;

  beforeAll(async () => {
    t = await openAlphaWithStore();
    view = new MeshView(t.newLog(), { logger: pino({ level: 'silent' }) });
    view.start();
  });
  afterAll(() => closeKeeperMesh(t, view, keeper));

  it('is asked again when its backoff says, however many commits arrive meanwhile', async () => {
    const unanswered: unknown[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void (JSON.parse(line).msg === 'the vault did not answer; asking again later' && unanswered.push(line)) });
    keeper = new SecretKeeper(t.nc, view, new MeshService(t.newLog(), {}, view), { prefix: t.names.prefix, controller: t.controllerKey, actor: 'controller', logger, retryMs: { first: 60_000, most: 60_000 } });
    await view.whenCaughtUp();
    keeper.start();
    await waitFor('the first pass to ask the silent vault', async () => (unanswered.length > 0 ? true : undefined));
    const first = unanswered.length;
    // 40 commits while the keeper backs off for a minute: each is a change it sees caught up.
    for (let i = 0; i < 40; i++) await t.run({ type: 'add-node', node: `busy-${i}` });
    await view.reached(await t.log.headSeq());
    await new Promise((r) => setTimeout(r, 300));
    expect(unanswered.length).toBe(first);
  });
});

// A pass looks at every secret the assignments want: on a busy log a change waits for the spacing
// since the last pass rather than starting one per commit.
describe('the secret keeper on a busy log with its vault answering', () => {
  let t: TestMesh;
  let view: MeshView;
  let keeper: SecretKeeper | undefined;
  let vault: ReturnType<typeof openTestVault> | undefined;

  beforeAll(async () => {
    t = await openAlphaWithStore();
    vault = openTestVault(t.nc, { prefix: t.names.prefix, controllerKey: t.controllerKey.publicKey });
    view = new MeshView(t.newLog(), { logger: pino({ level: 'silent' }) });
    view.start();
  });
  afterAll(() => closeKeeperMesh(t, view, keeper, vault));

  it('passes at most once per moment, however many commits arrive', async () => {
    const passes: number[] = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => void ((JSON.parse(line) as { msg: string }).msg === 'secrets pass' && passes.push(performance.now())) });
    const passEveryMs = 200;
    keeper = new SecretKeeper(t.nc, view, new MeshService(t.newLog(), {}, view), { prefix: t.names.prefix, controller: t.controllerKey, actor: 'controller', logger, retryMs: { first: 100, most: 500 }, passEveryMs });
    await view.whenCaughtUp();
    keeper.start();
    await waitFor('the superuser secret recorded', async () => (secretNamed(view.mesh().secrets, 'alpha-postgres/superuser') ? true : undefined));
    const started = performance.now();
    const before = passes.length;
    for (let i = 0; i < 40; i++) await t.run({ type: 'add-node', node: `busy-${i}` });
    await view.reached(await t.log.headSeq());
    await new Promise((r) => setTimeout(r, passEveryMs + 100));
    const elapsedMs = performance.now() - started;
    expect(passes.length - before).toBeGreaterThan(0);
    expect(passes.length - before).toBeLessThanOrEqual(Math.ceil(elapsedMs / passEveryMs) + 1);
  });
});
