import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Subscription } from '@nats-io/nats-core';
import pg from 'pg';
import { pino } from 'pino';
import { Agent } from '../../src/agent/agent.js';
import { stopRecordedProcesses } from '../../src/agent/left-running.js';
import { meshHome } from '../../src/config.js';
import type { StoredMeshEvent } from '../../src/domain/registry.js';
import { factSubject } from '../../src/domain/facts/events.js';
import { ident } from '../../src/projections/sql.js';
import { FAST } from '../agent/harness.js';
import { openTestVault } from '../helpers/vault.js';
import { makeSecret } from '../../src/adapters/vault-client.js';
import { hostKey, nodeIdentity } from '../../src/adapters/enrolment-client.js';
import { runMesh } from '../helpers/cli.js';
import { testDatabaseUrl } from '../helpers/database.js';
import { testNatsUrl } from '../helpers/log.js';
import { uniqueName } from '../helpers/names.js';
import { openTestMesh, waitFor, type TestMesh } from '../helpers/test-mesh.js';
import { dropSchemas, freshSchemas } from '../projections/harness.js';
import { eventOf } from '../helpers/given.js';
import { enrolAgentNode } from '../helpers/host-keys.js';

// Holds are facts (issue 125 of the seeds: "16 resources held for route-proxy" heard by nobody).
// A real agent holds a module whose secret the vault has not delivered; the controller states it
// once as fact.held on the log and on the controller seat's events, the holds projection keeps a
// row per held resource, `mesh node show` and `mesh status` name it. When the secret arrives the
// hold ends: one more fact.held, with nothing in it, and the rows are gone.

interface HeldData {
  node: string;
  module: string;
  resources: { resource: string; kind: string; reason: string | null }[];
}

describe('a hold is stated once as a fact, kept in node_holds, shown, and cleared once when it ends', () => {
  let t: TestMesh;
  let agent: Agent;
  let env: Record<string, string>;
  let pool: pg.Pool;
  let published: Subscription;
  let vault: ReturnType<typeof openTestVault> | undefined;
  const onTheBus: HeldData[] = [];
  const schemas = freshSchemas();
  const root = join(meshHome(), 'tmp', uniqueName('holds-'));
  const nodeRoot = join(root, 'nodes', 'alpha');

  const heldFacts = async (): Promise<StoredMeshEvent[]> => {
    const found: StoredMeshEvent[] = [];
    for await (const event of t.log.read({ aggregate: 'fact' })) if (event.type === 'fact.held') found.push(event);
    return found;
  };
  const rows = async () =>
    (await pool.query<{ node: string; module: string; resource: string; kind: string; reason: string | null; since_seq: string }>(`SELECT node, module, resource, kind, reason, since_seq FROM ${ident(schemas.read)}.node_holds ORDER BY resource`)).rows;

  beforeAll(async () => {
    mkdirSync(root, { recursive: true });
    t = await openTestMesh();
    pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 2 });
    env = await t.startControlPlane(schemas);
    published = t.nc.subscribe(factSubject('fact.held', t.names.prefix), { callback: (error, message) => void (error ?? onTheBus.push((message.json() as { data: HeldData }).data)) });
    // A stand-in for the vault: it holds mesh-vault, so a secret resolves to it, and delivers nothing.
    await t.run({ type: 'register-module', manifest: { name: 'stand-in-vault', provides: [{ provision: 'secret' }], canHold: ['mesh-vault'], resources: { processes: [{ name: 'vault', run: ['sleep', '600'] }] } } });
    // A proxy that needs a token from the vault: its secret and its process (which reads the token as an env file) are held until it comes.
    await t.run({
      type: 'register-module',
      manifest: {
        name: 'proxy',
        requires: [{ name: 'token', contract: 'secret', provider: 'module', seat: 'mesh-vault' }],
        resources: { processes: [{ name: 'server', run: ['sleep', '600'], envFiles: [{ from: 'token', reason: 'the upstream token' }] }] },
      },
    });
    await t.run({ type: 'add-node', node: 'alpha', root: nodeRoot, address: '127.0.0.1' });
    await t.run({ type: 'assign', module: 'stand-in-vault', node: 'alpha', hold: ['mesh-vault'], pins: {}, values: {}, placements: {} });
    await enrolAgentNode(t, 'alpha', join(root, 'agent'));
    agent = new Agent({ node: 'alpha', natsUrl: testNatsUrl(), stateDir: join(root, 'agent'), controllerKey: t.controllerKey.publicKey, wire: { prefix: t.names.prefix, nodesStream: t.names.nodesStream }, timings: { ...FAST, heartbeatMs: 500 }, logger: pino({ level: 'silent' }) });
    await agent.start();
  });
  afterAll(async () => {
    published?.unsubscribe();
    vault?.remove();
    await agent?.stop();
    stopRecordedProcesses(join(root, 'agent'), 'SIGKILL');
    await t.close();
    await dropSchemas(pool, schemas);
    await pool.end();
    rmSync(root, { recursive: true, force: true });
  });

  it('held: one fact naming each resource and its reason, on the log and the bus, two rows, shown by mesh node show and mesh status', async () => {
    await t.run({ type: 'assign', module: 'proxy', node: 'alpha', hold: [], pins: {}, values: {}, placements: {} });
    const [held] = await waitFor('the held fact', async () => {
      const found = await heldFacts();
      return found.length > 0 ? found : undefined;
    });
    const { data } = eventOf(held, 'fact.held');
    expect(data).toMatchObject({ node: 'alpha', module: 'proxy' });
    expect(data.resources).toEqual([
      { resource: 'proxy/secret-token', kind: 'secret', reason: expect.stringMatching(/^waiting for the vault to deliver /) },
      // it starts after the secret it reads is placed, and says it waits for it
      { resource: 'proxy/server', kind: 'process', reason: expect.stringMatching(/^waiting for proxy\/secret-token: waiting for the vault to deliver /) },
    ]);

    // Passes go on every 500 ms and the node reports again; nothing more is stated while nothing changes.
    await new Promise((r) => setTimeout(r, 3_000));
    expect(await heldFacts()).toHaveLength(1);
    await waitFor('the fact on the controller seat’s events', async () => onTheBus.length > 0);
    expect(onTheBus).toEqual([data]);

    const before = await waitFor('the holds projection’s rows', async () => {
      const found = await rows();
      return found.length === 2 ? found : undefined;
    });
    expect(before).toEqual(data.resources.map((r) => ({ node: 'alpha', module: 'proxy', resource: r.resource, kind: r.kind, reason: r.reason, since_seq: String(held?.seq) })));

    // -o wide: each held resource on one line (by default a long reason wraps at 100 columns).
    const show = await runMesh(['node', 'show', 'alpha', '-o', 'wide'], env);
    expect(show.code).toBe(0);
    expect(show.stdout).toContain('held back (2):');
    expect(show.stdout).toContain('  proxy: 2 held');
    expect(show.stdout).toContain(`    proxy/secret-token (secret): ${data.resources[0]?.reason} — since ${held?.time} (log seq ${held?.seq})`);
    const shown = JSON.parse((await runMesh(['node', 'show', 'alpha', '--json'], env)).stdout) as { held: unknown[] };
    expect(shown.held).toEqual(data.resources.map((r) => ({ module: 'proxy', ...r, since: { seq: held?.seq, time: held?.time } })));

    const status = await runMesh(['status', '--json'], env);
    expect(status.code).toBe(1);
    const body = JSON.parse(status.stdout) as { machines: string[]; nodes: { node: string; held: unknown[] }[] };
    expect(body.machines).toContainEqual(expect.stringMatching(new RegExp(`^alpha/proxy: assigned, not taken — 2 held since ${held?.time} \\(log seq ${held?.seq}\\)`)));
    expect(body.nodes.find((n) => n.node === 'alpha')?.held).toHaveLength(2);
  }, 90_000);

  it('released: the secret arrives, one more fact with nothing held, no rows, nothing shown; the mesh does what it was told', async () => {
    // A vault comes up and makes the token for alpha, by the keys alpha's agent holds: the next pass fetches it.
    vault = openTestVault(t.nc, { prefix: t.names.prefix, controllerKey: t.controllerKey.publicKey });
    const alpha = { node: 'alpha', signingKey: hostKey(join(root, 'agent')).publicKey, sealingKey: nodeIdentity(join(root, 'agent')).publicKey };
    await makeSecret(t.nc, { prefix: t.names.prefix, controller: t.controllerKey, secret: 'alpha-proxy/token', purpose: 'token of alpha/proxy', version: 1, recipients: [alpha] });

    const cleared = await waitFor('the hold cleared', async () => {
      const found = await heldFacts();
      return found.length === 2 ? found[1] : undefined;
    }, 60_000);
    expect(cleared.data).toMatchObject({ node: 'alpha', module: 'proxy', resources: [] });
    await new Promise((r) => setTimeout(r, 3_000));
    expect(await heldFacts()).toHaveLength(2);
    await waitFor('the clearing on the bus', async () => onTheBus.length === 2);
    expect(onTheBus[1]).toMatchObject({ node: 'alpha', module: 'proxy', resources: [] });

    await waitFor('no rows left', async () => (await rows()).length === 0);
    const show = await runMesh(['node', 'show', 'alpha'], env);
    expect(show.stdout).toContain('held back: nothing');
    expect(show.stdout).toMatch(/last facts:[\s\S]*fact\.held proxy/);
    await waitFor('mesh status exiting zero', async () => (await runMesh(['status'], env)).code === 0, 60_000);
  }, 120_000);
});
