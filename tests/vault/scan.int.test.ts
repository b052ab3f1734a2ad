import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { eventsStreamName } from '../../src/adapters/nats/control-streams.js';
import type { Agent } from '../../src/agent/agent.js';
import { stopRecordedProcesses } from '../../src/agent/left-running.js';
import { meshHome } from '../../src/config.js';
import { testDatabaseUrl } from '../helpers/database.js';
import { uniqueName } from '../helpers/names.js';
import { runMesh } from '../helpers/cli.js';
import { openTestMesh, waitFor, type TestMesh } from '../helpers/test-mesh.js';
import { enrolAndStartAgent, startSealedPath, listenToTheWire, plantedFound, projectionRows, storedMessages } from '../helpers/secret-places.js';
import { LOGIN_AND_TOKEN } from '../helpers/vault.js';
import { dropSchemas, freshSchemas } from '../projections/harness.js';

// Every path that handles a secret runs — the controller has the vault make it and records it, the
// declarations name it, two agents fetch it (the consumer's and the provider's of a per-consumer
// login, and a plain secret), write it, report, facts are stated, the projector folds it all —
// and then the values the agents hold are looked for everywhere the mesh keeps or sends anything:
// every message on the mesh's subjects while it ran (core and streams: LOG, NODES, CONTROL,
// EVENTS), what LOG, NODES and EVENTS store afterwards, and every row of every projection table.

describe('no secret value anywhere but the vault and the files of the nodes it names', () => {
  let t: TestMesh;
  let sealed: ReturnType<typeof startSealedPath>;
  let pool: pg.Pool;
  let wire: ReturnType<typeof listenToTheWire>;
  let env: Record<string, string>;
  const agents: Agent[] = [];
  const schemas = freshSchemas();
  const root = join(meshHome(), 'tmp', uniqueName('scan-'));
  const stateOf = (node: string) => join(root, 'agents', node);
  const nodeRoot = (node: string) => join(root, 'nodes', node);

  const assign = (module: string, node: string, hold: string[] = []) => t.run({ type: 'assign', module, node, hold, pins: {}, values: {}, placements: {} });
  const enrolAndStart = async (node: string) => void agents.push(await enrolAndStartAgent(t, node, stateOf(node)));
  const stored = (stream: string) => storedMessages(t, stream);

  beforeAll(async () => {
    mkdirSync(root, { recursive: true });
    t = await openTestMesh();
    pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 2 });
    wire = listenToTheWire(t);
    env = await t.startControlPlane(schemas);
    await t.run({ type: 'register-module', manifest: { name: 'test-vault', provides: [{ provision: 'secret' }], canHold: ['mesh-vault'], resources: {} } });
    await t.run({
      type: 'register-module',
      manifest: {
        name: 'logins',
        provides: [{ provision: 'test-login', perConsumerSecret: true, fields: { user: { type: 'string' }, password: { type: 'string', secret: true } }, answers: { user: '${consumer.name}' } }],
        resources: { processes: [{ name: 'server', run: ['sleep', '600'] }] },
      },
    });
    await t.run({
      type: 'register-module',
      manifest: {
        name: 'app',
        requires: LOGIN_AND_TOKEN,
        resources: { processes: [{ name: 'server', run: ['sh', '-c', 'test -s "$0" && exec sleep 600', '${token.path}'] }] },
      },
    });
    for (const node of ['alpha', 'beta']) await t.run({ type: 'add-node', node, root: nodeRoot(node), address: '127.0.0.1' });
    await assign('test-vault', 'alpha', ['mesh-vault']);
    await assign('logins', 'alpha');
    await assign('app', 'beta');
    sealed = startSealedPath(t);
    await enrolAndStart('alpha');
    await enrolAndStart('beta');
  });
  afterAll(async () => {
    wire?.subscription.unsubscribe();
    for (const agent of agents) await agent.stop();
    for (const node of ['alpha', 'beta']) stopRecordedProcesses(stateOf(node), 'SIGKILL');
    await sealed?.stop();
    await t.close();
    await dropSchemas(pool, schemas);
    await pool.end();
    rmSync(root, { recursive: true, force: true });
  });

  it('finds the values in the nodes’ files and nowhere in the streams, on the wire or in a projection', async () => {
    const applied = async (node: string, module: string) => {
      for await (const event of t.log.read({ aggregate: 'fact' })) if (event.type === 'fact.applied' && (event.data as { node: string }).node === node && (event.data as { module: string }).module === module) return true;
      return false;
    };
    await waitFor('app applied on beta', () => applied('beta', 'app'), 60_000);
    await waitFor('logins applied on alpha', () => applied('alpha', 'logins'), 60_000);

    const planted = {
      'the login beta/app presents': readFileSync(join(nodeRoot('beta'), '.mesh', 'app', 'secrets', 'db-secret'), 'utf8'),
      'the login alpha/logins applies': readFileSync(join(nodeRoot('alpha'), '.mesh', 'logins', 'consumers', 'beta-app'), 'utf8'),
      'the token of beta/app': readFileSync(join(nodeRoot('beta'), '.mesh', 'app', 'secrets', 'token'), 'utf8'),
    };
    // one secret for the consumer and its provider, another for the token
    expect(planted['the login beta/app presents']).toBe(planted['the login alpha/logins applies']);
    expect(planted['the token of beta/app']).not.toBe(planted['the login beta/app presents']);

    const onTheWire = wire.heard;
    const log = await stored(t.names.logStream);
    const nodes = await stored(t.names.nodesStream);
    const events = await stored(eventsStreamName({ prefix: t.names.prefix, nodes: t.names.nodesStream, control: t.names.controlStream }));
    const projections = await projectionRows(pool, schemas);
    // each place was looked into, and names the secrets it may name
    expect(log.join('\n')).toContain('"secret":"test-login/beta-app"');
    expect(nodes.join('\n')).toContain('"secret":"test-login/beta-app"');
    expect(onTheWire.some((m) => m.startsWith(`${t.names.prefix}.control.beta.report`))).toBe(true);
    expect(events.length).toBeGreaterThan(0);
    expect(projections.some((row) => row.includes('test-login/beta-app'))).toBe(true);
    const places = { 'the wire': onTheWire, LOG: log, NODES: nodes, EVENTS: events, projections };
    const found = plantedFound(places, planted);
    expect(found).toEqual([]);
  });

  it('mesh secret status names each secret, its version and recipients, and no value', async () => {
    const status = await runMesh(['secret', 'status', '--json'], env);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toEqual([
      { secret: 'beta-app/token', purpose: 'token of beta/app', version: 1, recipients: ['beta'], seq: expect.any(Number), rotation: null, origin: 'vault', inVault: true },
      { secret: 'test-login/beta-app', purpose: 'the test-login login of beta/app at alpha/logins', version: 1, recipients: ['alpha', 'beta'], seq: expect.any(Number), rotation: null, origin: 'vault', inVault: true },
    ]);
    const table = await runMesh(['secret', 'status'], env);
    expect(table.stdout.split('\n')[0]).toMatch(/^SECRET +VERSION +ROTATION +RECIPIENTS +PURPOSE/);
    expect(table.stdout).toMatch(/test-login\/beta-app +1 +none +alpha, beta +the test-login login/);
  });
});
