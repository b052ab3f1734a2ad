import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { Agent } from '../../src/agent/agent.js';
import { stopRecordedProcesses } from '../../src/agent/left-running.js';
import { meshHome } from '../../src/config.js';
import { FAST } from '../agent/harness.js';
import { runMesh } from '../helpers/cli.js';
import { fixtureManifest } from '../helpers/given.js';
import { testNatsUrl } from '../helpers/log.js';
import { uniqueName } from '../helpers/names.js';
import { testDatabaseUrl } from '../helpers/database.js';
import { openTestMesh, waitFor, type TestMesh } from '../helpers/test-mesh.js';
import { dropSchemas, freshSchemas } from '../projections/harness.js';
import { enrolAgentNode, publishSignedBeat } from '../helpers/host-keys.js';
import { hostKey } from '../../src/adapters/enrolment-client.js';

// `mesh status` against a real mesh with a real agent: it exits zero only when every node was heard
// from and applied its newest declaration with nothing held, refused or crash-looping — and names
// what is not so, never claiming health from absence.

describe('mesh status tells what machines are doing, and never claims health from absence', () => {
  let t: TestMesh;
  let agent: Agent;
  let env: Record<string, string>;
  let pool: pg.Pool;
  const schemas = freshSchemas();
  const root = join(meshHome(), 'tmp', uniqueName('status-'));
  let lastSeen: unknown;
  const status = async () => {
    const result = await runMesh(['status', '--json'], env);
    const body = JSON.parse(result.stdout) as { ok: boolean; machines: string[]; refusals: unknown[]; unknown: string[] };
    lastSeen = { code: result.code, machines: body.machines, refusals: body.refusals, unknown: body.unknown };
    return { code: result.code, body };
  };
  /** Until status exits zero; on time out, says what it last reported. */
  const healthy = () =>
    waitFor('the mesh doing what it was told', async () => ((await status()).code === 0 ? true : undefined), 120_000).catch((error: Error) => {
      throw new Error(`${error.message}; last status: ${JSON.stringify(lastSeen)}`);
    });

  beforeAll(async () => {
    mkdirSync(root, { recursive: true });
    t = await openTestMesh();
    pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 2 });
    env = {
      ...(await t.startControlPlane(schemas)),
      // Short enough to see a stopped agent soon, long enough not to flap on a loaded machine.
      MESH_HEARTBEAT_THRESHOLD_MS: '8000',
    };
    await t.run({ type: 'register-module', manifest: fixtureManifest('greeter') });
    await t.run({ type: 'register-module', manifest: { name: 'flaky', resources: { processes: [{ name: 'worker', run: ['sh', '-c', 'echo "cannot open /data" >&2; exit 1'] }] } } });
    await t.run({ type: 'add-node', node: 'alpha', root: join(root, 'nodes', 'alpha'), address: '127.0.0.1' });
    await enrolAgentNode(t, 'alpha', join(root, 'agent'));
    agent = new Agent({ node: 'alpha', natsUrl: testNatsUrl(), stateDir: join(root, 'agent'), controllerKey: t.controllerKey.publicKey, wire: { prefix: t.names.prefix, nodesStream: t.names.nodesStream }, timings: { ...FAST, heartbeatMs: 500 }, logger: pino({ level: 'silent' }) });
    await agent.start();
  });
  afterAll(async () => {
    await agent.stop();
    stopRecordedProcesses(join(root, 'agent'), 'SIGKILL');
    await t.close();
    await dropSchemas(pool, schemas);
    await pool.end();
    rmSync(root, { recursive: true, force: true });
  });

  it('exits zero when the node runs what it was told', async () => {
    // The greeter requires the bus: a stand-in holds mesh-broker so it resolves.
    await t.run({ type: 'register-module', manifest: fixtureManifest('local-bus') });
    await t.run({ type: 'assign', module: 'local-bus', node: 'alpha', hold: ['mesh-broker'], pins: {}, values: { 'nats-port': new URL(testNatsUrl()).port }, placements: {} });
    await t.run({ type: 'assign', module: 'greeter', node: 'alpha', hold: [], pins: {}, values: { port: String(30_000 + Math.floor(Math.random() * 20_000)) }, placements: {} });
    const healthy = await waitFor('the mesh doing what it was told', async () => {
      const result = await status();
      return result.code === 0 ? result : undefined;
    }, 60_000);
    expect(healthy.body.ok).toBe(true);
    expect(healthy.body.machines).toEqual([]);
  });

  it('states one more applied fact for a new version, naming the previous', async () => {
    const greeter = fixtureManifest('greeter') as { description: string };
    await t.run({ type: 'register-module', manifest: { ...greeter, description: `${greeter.description} Now in version 2.` } });
    const upgraded = await waitFor('the new version applied', async () => {
      const found = [];
      for await (const event of t.log.read({ aggregate: 'fact' })) if (event.type === 'fact.applied' && (event.data as { module: string }).module === 'greeter') found.push(event);
      return found.length === 2 ? found : undefined;
    }, 60_000);
    expect(upgraded[1]?.data).toMatchObject({ version: { definitionVersion: 2 }, previous: { definitionVersion: 1 } });
    await healthy();
  });

  it('names a crash loop and exits non-zero', async () => {
    await t.run({ type: 'assign', module: 'flaky', node: 'alpha', hold: [], pins: {}, values: {}, placements: {} });
    const looping = await waitFor('the crash loop named', async () => {
      const result = await status();
      return result.body.machines.some((m) => m.includes('alpha/flaky: flaky/worker crash-looping')) ? result : undefined;
    }, 60_000);
    expect(looping.code).toBe(1);
    await t.run({ type: 'unassign', module: 'flaky', node: 'alpha' });
    await healthy();
  });

  it('names a node that said more than its budget, and exits non-zero', async () => {
    // A heartbeat of capabilities outside their grammar, as alpha (its subject): refused, and alpha named for it.
    publishSignedBeat(t.nc, t.names.prefix, 'alpha', hostKey(join(root, 'agent')), { node: 'alpha', capabilities: ['Not A Kind'] });
    const named = await waitFor('the node named', async () => {
      const result = await status();
      return result.body.machines.some((m) => m.startsWith('alpha: over its budget since ')) ? result : undefined;
    }, 60_000);
    expect(named.code).toBe(1);
    expect(named.body.machines).toContainEqual(expect.stringContaining('1 message refused, the last: a heartbeat out of bounds: capabilities.0: a capability is a resource kind'));
  });

  it('names a node whose agent stopped as not heard from since T, and exits non-zero', async () => {
    await agent.stop();
    const silent = await waitFor('the silence named', async () => {
      const result = await status();
      return result.body.machines.some((m) => m.startsWith('alpha: not heard from since ')) ? result : undefined;
    }, 60_000);
    expect(silent.code).toBe(1);
    expect(silent.body.ok).toBe(false);
  });

  it('publishes no declaration when a projection is rebuilt: declarations are derived from the log, not the tables', async () => {
    const published = await t.nodesHead();
    const rebuilt = await runMesh(['projections', 'rebuild', 'assignments', '--json'], env);
    expect(rebuilt.code).toBe(0);
    expect(await t.nodesHead()).toBe(published);
  });
});
