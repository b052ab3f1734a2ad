import { afterEach, describe, expect, it } from '@jest/globals';
import { join } from 'node:path';
import { isAlive } from '../../src/dev/processes.js';
import type { Resource } from '../../src/domain/declarations/declaration.js';
import { assignment, openAgentTest, processResource, stepResource, type AgentTest } from './harness.js';

describe('a module that cannot start', () => {
  let t: AgentTest;
  afterEach(async () => t?.cleanup());

  it('holds only its own module: a failed prepare step, a step that cannot start, a crash loop, a missing engine and secret leave the other module running', async () => {
    t = await openAgentTest();
    const container: Resource = {
      key: 'boxed/app', module: 'boxed', kind: 'container', image: 'registry.local/app:1', command: null, user: null,
      env: {}, envFiles: [], mounts: [], ports: [{ port: 8080, protocol: 'tcp' }], restartOn: [], after: [],
    };
    const secret: Resource = { key: 'boxed/token', module: 'boxed', kind: 'secret', secret: 'app-token', path: join(t.root, 'token'), owner: null, vault: { node: 'v', module: 'vault' } };
    await t.publish(
      t.declaration(1, [
        assignment('broken', [
          stepResource('broken', 'prepare', ['sh', '-c', 'echo migration 12 failed >&2; exit 3']),
          processResource('broken', 'server', ['sleep', '300'], { after: ['broken/prepare'] }),
        ]),
        assignment('healthy', [processResource('healthy', 'server', ['sleep', '300'])]),
        assignment('missing', [stepResource('missing', 'prepare', [join(t.root, 'no-such-command')])]),
        assignment('flaky', [processResource('flaky', 'server', ['sh', '-c', 'exit 1'])]),
        assignment('boxed', [secret, container]),
      ]),
    );
    await t.startAgent();

    const report = await t.reportWhere('every module settled', (r) => r.resources.some((o) => o.outcome === 'crash-looping') && r.resources.every((o) => !o.reason?.startsWith('running since') && !o.reason?.includes(': running since')));
    const outcome = (key: string) => report.resources.find((r) => r.key === key);
    expect(outcome('broken/prepare')).toMatchObject({ outcome: 'refused', reason: expect.stringMatching(/exited with status 3: migration 12 failed/) });
    expect(outcome('broken/server')).toMatchObject({ outcome: 'held', reason: expect.stringMatching(/waiting for broken\/prepare, which failed: exited with status 3: migration 12 failed/) });
    expect(outcome('healthy/server')).toMatchObject({ outcome: 'applied' });
    expect(outcome('missing/prepare')).toMatchObject({ outcome: 'refused', reason: expect.stringMatching(/^could not start: .*ENOENT/) });
    expect(outcome('flaky/server')).toMatchObject({ outcome: 'crash-looping', reason: 'exited with status 1', restarts: expect.any(Number) });
    expect(outcome('flaky/server')?.restarts).toBeGreaterThanOrEqual(3);
    expect(outcome('boxed/token')).toMatchObject({ outcome: 'held', reason: expect.stringMatching(/^waiting for the vault to deliver app-token: no vault answered/) });
    expect(outcome('boxed/app')).toMatchObject({ outcome: 'held', reason: expect.stringMatching(/^no Docker engine answers: /) });
    expect(report.running.map((r) => r.module)).toEqual(['healthy']);

    expect(isAlive(await t.runningPid('healthy/server'))).toBe(true);
    expect(t.records().some((r) => r.key === 'broken/server')).toBe(false);
  });
});
