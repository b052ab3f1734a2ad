import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { Agent } from '../../src/agent/agent.js';
import { stopRecordedProcesses } from '../../src/agent/left-running.js';
import { meshHome, projectRoot } from '../../src/config.js';
import { tokenVerifier } from '../../src/domain/nodes/enrolment.js';
import { freePort } from '../../src/dev/ports.js';
import type { StoredEvent } from '../../src/domain/events/envelope.js';
import { FAST } from '../agent/harness.js';
import { fixtureManifest } from '../helpers/given.js';
import { runMesh } from '../helpers/cli.js';
import { testNatsUrl } from '../helpers/log.js';
import { uniqueName } from '../helpers/names.js';
import { openTestMesh, waitFor, type TestMesh } from '../helpers/test-mesh.js';
import { enrolAgentNode } from '../helpers/host-keys.js';

// The whole path with real parts: an operator's command appended to the log, the controller
// deriving the node's declaration, a real agent applying it by running real processes, its report
// turned into facts. Nothing in between is simulated.

const httpText = async (port: number): Promise<string | undefined> => {
  try {
    const response = await fetch(`http://127.0.0.1:${port}/`);
    return await response.text();
  } catch {
    return undefined;
  }
};

describe('a mesh on this machine: command → declaration → agent → running process → facts', () => {
  let t: TestMesh;
  let root: string;
  const agents: Agent[] = [];

  const enrolled = new Set<string>();
  const startAgent = async (node: string): Promise<Agent> => {
    // Each test has a mesh of its own: a node is enrolled once in each.
    if (!enrolled.has(`${t.names.prefix}/${node}`)) await enrolAgentNode(t, node, join(root, 'agents', node));
    enrolled.add(`${t.names.prefix}/${node}`);
    const agent = new Agent({
      node,
      natsUrl: testNatsUrl(),
      stateDir: join(root, 'agents', node),
      controllerKey: t.controllerKey.publicKey,
      wire: { prefix: t.names.prefix, nodesStream: t.names.nodesStream },
      timings: { ...FAST, crashLoopAfter: 3 },
      logger: pino({ level: 'silent' }),
    });
    await agent.start();
    agents.push(agent);
    return agent;
  };

  const facts = async (): Promise<StoredEvent[]> => {
    const found: StoredEvent[] = [];
    for await (const event of t.log.read({ aggregate: 'fact' })) found.push(event);
    return found;
  };

  const assign = (module: string, node: string, options: Partial<{ hold: string[]; values: Record<string, string> }> = {}) =>
    t.run({ type: 'assign', module, node, hold: options.hold ?? [], pins: {}, values: options.values ?? {}, placements: {} });

  beforeEach(async () => {
    root = join(meshHome(), 'tmp', uniqueName('e2e-'));
    mkdirSync(root, { recursive: true });
    t = await openTestMesh();
    const controller = await t.startController();
    await t.startIngester(controller);
    for (const name of ['local-bus', 'greeter', 'caller']) await t.run({ type: 'register-module', manifest: fixtureManifest(name) });
    for (const node of ['alpha', 'beta']) await t.run({ type: 'add-node', node, root: join(root, 'nodes', node), address: '127.0.0.1' });
    await assign('local-bus', 'alpha', { hold: ['mesh-broker'], values: { 'nats-port': new URL(testNatsUrl()).port } });
  });

  afterEach(async () => {
    // An agent's stop leaves what it runs running, by design: the test ends those itself.
    for (const agent of agents.splice(0)) await agent.stop();
    for (const node of ['alpha', 'beta']) stopRecordedProcesses(join(root, 'agents', node), 'SIGKILL');
    await t.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('runs the prepare step, then the process; the process answers; unassigned, it stops', async () => {
    await startAgent('alpha');
    await startAgent('beta');
    const greeterPort = await freePort();
    const callerPort = await freePort();
    await assign('greeter', 'alpha', { hold: ['front-desk'], values: { port: String(greeterPort), greeting: 'hello from alpha' } });
    await assign('caller', 'beta', { values: { port: String(callerPort) } });

    expect(await waitFor('the greeter answering', () => httpText(greeterPort))).toBe('hello from alpha\n');
    expect(await waitFor('the caller answering', async () => ((await httpText(callerPort))?.includes('hello') ? httpText(callerPort) : undefined))).toBe('the greeter says: hello from alpha\n');

    // The step ran first: the mark it left is older than the process that serves.
    const data = join(root, 'nodes', 'alpha', 'greeter', 'data');
    expect(existsSync(join(data, 'prepared-at'))).toBe(true);
    expect(readFileSync(join(data, 'greeting.txt'), 'utf8')).toBe('hello from alpha\n');
    expect(statSync(join(data, 'prepared-at')).mtimeMs).toBeLessThanOrEqual(Date.now());

    // What machines now run is stated once each, under the controller's seat.
    const applied = await waitFor('applied facts for all three modules', async () => {
      const found = (await facts()).filter((f) => f.type === 'fact.applied');
      return found.length === 3 ? found : undefined;
    });
    expect(applied.map((f) => `${(f.data as { node: string }).node}/${(f.data as { module: string }).module}`).sort()).toEqual(['alpha/greeter', 'alpha/local-bus', 'beta/caller']);

    await t.run({ type: 'unassign', module: 'caller', node: 'beta' });
    await t.run({ type: 'unassign', module: 'greeter', node: 'alpha' });
    await waitFor('the caller stopped', async () => (await httpText(callerPort)) === undefined);
    await waitFor('the greeter stopped', async () => (await httpText(greeterPort)) === undefined);
    // What the module made outlives its declaration: the directory holding it is not removed.
    expect(existsSync(join(data, 'prepared-at'))).toBe(true);
    await waitFor('stopped facts', async () => (await facts()).filter((f) => f.type === 'fact.stopped').length === 2);
  });

  it('a failed prepare step refuses its own module, named in one fact, while another module on the node runs', async () => {
    await t.run({
      type: 'register-module',
      manifest: {
        name: 'broken',
        requires: [{ name: 'port', contract: 'value', provider: 'operator', type: 'port', default: 18099 }],
        resources: {
          prepare: { command: ['sh', '-c', 'echo "migration 0042 failed" >&2; exit 3'], gates: ['server'] },
          processes: [{ name: 'server', run: ['node', '-e', "require('http').createServer((q, s) => s.end('broken')).listen(Number(process.argv[1]), '127.0.0.1')", '${port}'] }],
        },
      },
    });
    await startAgent('alpha');
    const brokenPort = await freePort();
    const greeterPort = await freePort();
    await assign('broken', 'alpha', { values: { port: String(brokenPort) } });
    await assign('greeter', 'alpha', { values: { port: String(greeterPort) } });
    expect(await waitFor('the greeter answering', () => httpText(greeterPort))).toBe('hello from the mesh\n');
    const refused = await waitFor('the refused fact', async () => (await facts()).find((f) => f.type === 'fact.refused'));
    expect(refused.data).toMatchObject({ node: 'alpha', module: 'broken', version: { definitionVersion: 1 }, resource: 'broken/prepare' });
    expect((refused.data as { reason: string }).reason).toContain('3');
    expect(await httpText(brokenPort)).toBeUndefined();
    // Stated once, however many reports follow.
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await facts()).filter((f) => f.type === 'fact.refused')).toHaveLength(1);
  });

  it('an agent started by an operator with a token file joins the mesh once, keeps its keys and removes the file', async () => {
    t.startEnrolment();
    const tokenId = randomBytes(8).toString('hex');
    const secret = randomBytes(24).toString('base64url');
    await t.run({ type: 'issue-enrolment-token', tokenId, verifier: tokenVerifier(secret), node: 'gamma', expiresAt: new Date(Date.now() + 60_000).toISOString() });
    const stateDir = join(root, 'agents', 'gamma');
    const tokenFile = join(root, 'gamma-token');
    mkdirSync(root, { recursive: true });
    writeFileSync(tokenFile, `${tokenId}.${secret}\n`, { mode: 0o600 });
    const env = { MESH_NATS_URL: testNatsUrl(), MESH_SUBJECT_PREFIX: t.names.prefix, MESH_NODES_STREAM: t.names.nodesStream };
    // a token on the command line is refused, naming why
    const refused = await runMesh(['agent', '--node', 'gamma', '--state', stateDir, '--token', `${tokenId}.${secret}`], env);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('visible to every user of the machine');
    const agent = spawn(process.execPath, [join(projectRoot, 'bin', 'mesh.js'), 'agent', '--node', 'gamma', '--state', stateDir, '--token-file', tokenFile], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    agent.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    try {
      await waitFor('the node enrolled', async () => {
        for await (const event of t.log.read({ aggregate: 'node.gamma' })) if (event.type === 'node.enrolled') return event;
        return undefined;
      });
      await waitFor('the agent saying so', async () => output.includes('node gamma enrolled'));
      expect(statSync(join(stateDir, 'identity.json')).mode & 0o777).toBe(0o600);
      expect(statSync(join(stateDir, 'host.key')).mode & 0o777).toBe(0o600);
      expect(existsSync(join(stateDir, 'enrolment.json'))).toBe(true);
      await waitFor('the token file removed', async () => !existsSync(tokenFile));
    } finally {
      agent.kill('SIGTERM');
      await new Promise((r) => agent.once('exit', r));
    }
  });

  it('a process that exits at once is one crash-loop fact with its count, not one per restart', async () => {
    await t.run({ type: 'register-module', manifest: { name: 'flaky', resources: { processes: [{ name: 'worker', run: ['sh', '-c', 'echo "cannot open /data" >&2; exit 1'] }] } } });
    await startAgent('beta');
    await assign('flaky', 'beta');
    const looping = await waitFor('the crash-loop fact', async () => (await facts()).find((f) => f.type === 'fact.crash-looping'));
    expect(looping.data).toMatchObject({ node: 'beta', module: 'flaky', resource: 'flaky/worker' });
    expect((looping.data as { restarts: number }).restarts).toBeGreaterThanOrEqual(3);
    await new Promise((r) => setTimeout(r, 2_000));
    expect((await facts()).filter((f) => f.type === 'fact.crash-looping')).toHaveLength(1);
  });
});
