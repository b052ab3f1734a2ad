import { afterEach, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { assignment, directoryResource, fileResource, openAgentTest, type AgentTest } from './harness.js';

describe('declarations in sequence', () => {
  let t: AgentTest;
  afterEach(async () => t?.cleanup());

  it('gives an agent that was away only the newest of five, and refuses a re-published older one', async () => {
    t = await openAgentTest();
    const dir = join(t.root, 'machine');
    const version = (n: number) => t.declaration(n, [assignment('notes', [directoryResource('notes', 'dir', dir), fileResource('notes', 'version', join(dir, 'version'), `v${n}\n`)], n)]);
    for (let n = 1; n <= 5; n++) await t.publish(version(n));

    await t.startAgent();
    await t.reportWhere('the fifth applied', (r) => r.sequence === 5 && r.running.length === 1);
    expect(readFileSync(join(dir, 'version'), 'utf8')).toBe('v5\n');
    // Every report the agent made is about the fifth: it never saw the first four.
    expect(new Set((await t.reports()).map((r) => r.sequence))).toEqual(new Set([5]));

    await t.publish(version(3));
    const refused = await t.reportWhere('the third refused', (r) => r.sequence === 3);
    expect(refused.refusal).toMatch(/sequence 3 is lower than 5/);
    expect(refused.resources.map((r) => r.outcome)).toEqual(['refused', 'refused']);
    expect(refused.running).toEqual([{ module: 'notes', definitionVersion: 5, artifact: null }]);
    expect(readFileSync(join(dir, 'version'), 'utf8')).toBe('v5\n');
  });
});
