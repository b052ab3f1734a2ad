import { afterEach, describe, expect, it } from '@jest/globals';
import { isAlive } from '../../src/dev/processes.js';
import { assignment, openAgentTest, processResource, waitFor, type AgentTest } from './harness.js';

describe('an agent restart', () => {
  let t: AgentTest;
  afterEach(async () => t?.cleanup());

  it('restarts nothing: `mesh agent` stopped and started again adopts the same process, and re-applying the same declaration restarts nothing', async () => {
    t = await openAgentTest();
    const declaration = t.declaration(1, [assignment('daemon', [processResource('daemon', 'server', ['sh', '-c', 'sleep 300; exit 0'])])]);
    await t.publish(declaration);

    const first = t.runAgentCli();
    await t.reportWhere('the daemon running', (r) => r.running.length === 1);
    const pid = await t.runningPid('daemon/server');
    expect(await first.stop('SIGTERM')).toBe(0);
    expect(isAlive(pid)).toBe(true);

    const reportsBefore = (await t.reports()).length;
    const second = t.runAgentCli();
    // A starting agent reports the declaration it holds, once it has reconciled it.
    await waitFor('a report from the restarted agent', async () => (await t.reports()).length > reportsBefore);
    expect(second.output()).toMatch(/agent for node/);
    expect(t.pidOf('daemon/server')).toBe(pid);
    expect(isAlive(pid)).toBe(true);

    const reportsAfterRestart = (await t.reports()).length;
    await t.publish(declaration);
    await waitFor('the same declaration re-applied', async () => (await t.reports()).length > reportsAfterRestart);
    expect(t.pidOf('daemon/server')).toBe(pid);
    expect(t.records().find((r) => r.key === 'daemon/server')).toMatchObject({ restarts: 0 });
    expect(await second.stop('SIGTERM')).toBe(0);
    expect(isAlive(pid)).toBe(true);
  });
});
