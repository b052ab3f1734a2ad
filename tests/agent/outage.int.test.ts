import { afterEach, describe, expect, it } from '@jest/globals';
import { assertControlStreams } from '../../src/adapters/nats/control-streams.js';
import { isAlive } from '../../src/dev/processes.js';
import type { Agent } from '../../src/agent/agent.js';
import { scratchNats } from '../helpers/scratch-nats.js';
import { assignment, openAgentTest, processResource, waitFor, type AgentTest } from './harness.js';

describe('an agent while NATS is away', () => {
  let server: Awaited<ReturnType<typeof scratchNats>> | undefined;
  let t: AgentTest;
  afterEach(async () => {
    await t?.cleanup();
    await server?.remove();
  });

  it('keeps every process running and restarts none while NATS is killed, then resumes applying', async () => {
    server = await scratchNats('agent-outage');
    t = await openAgentTest({ url: server.url });
    const api = assignment('api', [processResource('api', 'server', ['sleep', '300'])]);
    await t.publish(t.declaration(1, [api]));
    const agent = await t.startAgent();
    await t.reportWhere('api running', (r) => r.running.length === 1);
    const pid = await t.runningPid('api/server');

    await server.kill();
    await waitFor('the agent to notice', () => !agent.status().connected);
    // Several reconcile passes with NATS gone: level-based, they find everything as declared.
    const passes = agent.status().passes;
    await waitFor('three passes while disconnected', () => passes + 3 <= agent.status().passes);
    expect(agent.status().connected).toBe(false);
    expect(isAlive(pid)).toBe(true);
    expect(t.pidOf('api/server')).toBe(pid);

    await server.restart();
    await waitFor('the agent to reconnect', () => connected(agent));
    const worker = assignment('worker', [processResource('worker', 'server', ['sleep', '300'])]);
    await t.publish(t.declaration(2, [api, worker]));
    await t.reportWhere('the declaration sent after the outage applied', (r) => r.sequence === 2 && r.running.length === 2);
    expect(isAlive(await t.runningPid('worker/server'))).toBe(true);
    expect(t.pidOf('api/server')).toBe(pid);
    expect(t.records().find((r) => r.key === 'api/server')).toMatchObject({ restarts: 0 });
  });

  it('applies while CONTROL is missing, keeps its report, and delivers it once the stream is there', async () => {
    t = await openAgentTest({ withoutControl: true });
    await t.publish(t.declaration(1, [assignment('api', [processResource('api', 'server', ['sleep', '300'])])]));
    const agent = await t.startAgent();
    expect(isAlive(await t.runningPid('api/server'))).toBe(true);
    await waitFor('the report to be made', () => agent.status().lastReport?.sequence === 1);

    await assertControlStreams(t.jsm, t.names);
    const report = await t.reportWhere('the kept report delivered', (r) => r.sequence === 1);
    expect(report.running).toEqual([{ module: 'api', definitionVersion: 1, artifact: null }]);
  });
});

const connected = (agent: Agent): boolean => agent.status().connected;
