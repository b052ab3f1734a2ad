import { afterEach, describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Resource } from '../../src/domain/declarations/declaration.js';
import { uniqueName } from '../helpers/names.js';
import { assignment, directoryResource, fileResource, openAgentTest, type AgentTest } from './harness.js';

// Defence in depth: whatever a declaration says, the agent checks each path, and where it lands
// on its disk through any link, before it writes, chowns or chmods anything — and gives a host
// folder it changed back as it found it. These declarations are forged (the controller never
// composes them), as an attacker who got one onto the node's subject would.

const isRoot = process.getuid?.() === 0;

describe('the agent keeps a module to its place', () => {
  let t: AgentTest;
  const cleanups: (() => void)[] = [];
  afterEach(async () => {
    for (const clean of cleanups.splice(0)) clean();
    await t?.cleanup();
  });

  it('refuses a file, a directory and a region that would leave the module\'s place, and touches nothing there', async () => {
    t = await openAgentTest();
    const machine = join(t.root, 'machine');
    const config = join(machine, 'evil', 'config');
    const outside = join(machine, 'outside');
    mkdirSync(config, { recursive: true });
    mkdirSync(outside, { recursive: true });
    // What the module's own process could leave in its directory: a link out of it.
    symlinkSync('../../outside', join(config, 'out'));
    // A shared file that is a link into the machine's running state. Should the agent ever follow it,
    // it writes only into this test's own file.
    const target = join('/run', uniqueName('mesh-paths-'));
    writeFileSync(target, 'untouched\n');
    cleanups.push(() => rmSync(target, { force: true }));
    symlinkSync(target, join(machine, 'hosts'));
    // Its own mode, so that even an agent that did chmod it would change nothing.
    const etcMode = (statSync('/etc').mode & 0o7777).toString(8).padStart(4, '0');
    const region: Resource = { key: 'evil/hosts', module: 'evil', kind: 'region', path: join(machine, 'hosts'), content: '10.0.0.1 evil\n', at: 'end' };

    await t.publish(
      t.declaration(1, [
        assignment('evil', [
          directoryResource('evil', 'config', config),
          fileResource('evil', 'escape', `${config}/../../outside/x`, 'owned\n'),
          fileResource('evil', 'through', join(config, 'out', 'y'), 'owned\n'),
          directoryResource('evil', 'etc', '/etc', etcMode),
          region,
        ]),
      ]),
    );
    await t.startAgent();
    const report = await t.reportWhere('the declaration applied', (r) => r.sequence === 1);
    const outcome = (key: string) => report.resources.find((r) => r.key === key);
    expect(outcome('evil/config')).toMatchObject({ outcome: 'applied' });
    expect(outcome('evil/escape')).toMatchObject({ outcome: 'refused', reason: `${config}/../../outside/x contains "..": a file stays inside its module's place` });
    expect(outcome('evil/through')).toMatchObject({ outcome: 'refused', reason: `${join(config, 'out', 'y')} resolves to ${join(outside, 'y')}, which is outside its place ${config}: a file stays inside its module's place` });
    expect(outcome('evil/etc')).toMatchObject({ outcome: 'refused', reason: expect.stringContaining("/etc falls in /etc (the machine's configuration): a module's directory is never one of the machine's own folders") });
    expect(outcome('evil/hosts')).toMatchObject({ outcome: 'refused', reason: expect.stringContaining(`resolves to ${target}, which falls in /run`) });
    expect(existsSync(join(outside, 'x'))).toBe(false);
    expect(existsSync(join(outside, 'y'))).toBe(false);
    expect(readFileSync(target, 'utf8')).toBe('untouched\n');
    expect(t.records().map((r) => r.key)).toEqual(['evil/config']);
  });

  (isRoot ? it : it.skip)('gives a host folder back its owner and mode when the directory placed on it is undeclared', async () => {
    t = await openAgentTest();
    const host = join(t.root, 'machine', 'shared');
    mkdirSync(host, { recursive: true, mode: 0o755 });
    writeFileSync(join(host, 'theirs.txt'), 'the machine\'s\n');
    const placed = { ...directoryResource('mallory', 'data', host, '0777'), owner: 'nobody' };

    await t.publish(t.declaration(1, [assignment('mallory', [placed])]));
    await t.startAgent();
    await t.reportWhere('the directory applied', (r) => r.sequence === 1 && r.resources[0]?.outcome === 'applied');
    expect(statSync(host)).toMatchObject({ uid: 65534, gid: 65534 });
    expect(statSync(host).mode & 0o7777).toBe(0o777);
    expect(t.records()).toEqual([expect.objectContaining({ kind: 'directory', path: host, found: true, foundAs: { uid: 0, gid: 0, mode: 0o755 } })]);

    await t.publish(t.declaration(2, []));
    await t.reportWhere('the empty declaration applied', (r) => r.sequence === 2);
    expect(statSync(host)).toMatchObject({ uid: 0, gid: 0 });
    expect(statSync(host).mode & 0o7777).toBe(0o755);
    expect(readFileSync(join(host, 'theirs.txt'), 'utf8')).toBe('the machine\'s\n');
    expect(t.records()).toEqual([]);
  });
});
