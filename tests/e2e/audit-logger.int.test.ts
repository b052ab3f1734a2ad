import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { Agent } from '../../src/agent/agent.js';
import { stopRecordedProcesses } from '../../src/agent/left-running.js';
import { meshHome } from '../../src/config.js';
import { FAST } from '../agent/harness.js';
import { fixtureManifest } from '../helpers/given.js';
import { testNatsUrl } from '../helpers/log.js';
import { uniqueName } from '../helpers/names.js';
import { openTestMesh, waitFor, type TestMesh } from '../helpers/test-mesh.js';

// The audit logger from the fixture catalogue, run by a real agent as a real process: it consumes
// every event (`**`) and writes each to its log directory — the facts the controller states
// included.

describe('an audit logger consuming every event', () => {
  let t: TestMesh;
  let agent: Agent;
  const root = join(meshHome(), 'tmp', uniqueName('audit-logger-'));
  const file = join(root, 'nodes', 'alpha', 'audit-logger', 'logs', 'events.jsonl');

  beforeAll(async () => {
    mkdirSync(root, { recursive: true });
    t = await openTestMesh();
    const controller = await t.startController();
    await t.startIngester(controller);
    for (const name of ['local-bus', 'audit-logger', 'greeter']) await t.run({ type: 'register-module', manifest: fixtureManifest(name) });
    await t.run({ type: 'add-node', node: 'alpha', root: join(root, 'nodes', 'alpha'), address: '127.0.0.1' });
    agent = new Agent({ node: 'alpha', natsUrl: testNatsUrl(), stateDir: join(root, 'agent'), wire: { prefix: t.names.prefix, nodesStream: t.names.nodesStream }, timings: FAST, logger: pino({ level: 'silent' }) });
    await agent.start();
  });
  afterAll(async () => {
    await agent.stop();
    stopRecordedProcesses(join(root, 'agent'), 'SIGKILL');
    await t.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('writes the facts stated after it started, one JSON line each', async () => {
    await t.run({ type: 'assign', module: 'local-bus', node: 'alpha', hold: ['mesh-broker'], pins: {}, values: { 'nats-port': new URL(testNatsUrl()).port }, placements: {} });
    await t.run({ type: 'assign', module: 'audit-logger', node: 'alpha', hold: [], pins: {}, values: {}, placements: {} });
    await waitFor('the audit logger running', async () => (await facts()).some((f) => f.type === 'fact.applied' && (f.data as { module: string }).module === 'audit-logger'), 60_000);

    await t.run({ type: 'assign', module: 'greeter', node: 'alpha', hold: [], pins: {}, values: { port: String(30_000 + Math.floor(Math.random() * 20_000)) }, placements: {} });
    const written = await waitFor('the greeter’s applied fact in the audit log', async () => {
      if (!existsSync(file)) return undefined;
      const lines = readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map((line) => JSON.parse(line) as { subject: string; event: { type: string; data: { module: string } } });
      return lines.find((l) => l.event.type === 'fact.applied' && l.event.data.module === 'greeter');
    }, 60_000);
    expect(written.subject).toBe(`${t.names.prefix}.seat.mesh-controller.event.applied`);
  });

  const facts = async () => {
    const found = [];
    for await (const event of t.log.read({ aggregate: 'fact' })) found.push(event);
    return found;
  };
});
