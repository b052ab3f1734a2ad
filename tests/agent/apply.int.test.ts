import { afterEach, describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isAlive, waitForExit } from '../../src/dev/processes.js';
import { assignment, directoryResource, fileResource, openAgentTest, processResource, stepResource, waitFor, type AgentTest } from './harness.js';

describe('the node agent applies a module', () => {
  let t: AgentTest;
  afterEach(async () => t?.cleanup());

  it('makes its directory and file, runs its prepare step, then its process; stops it when undeclared and keeps the data', async () => {
    t = await openAgentTest();
    const data = join(t.root, 'machine', 'web');
    const web = assignment('web', [
      directoryResource('web', 'data', data, '0750'),
      fileResource('web', 'config', join(data, 'web.conf'), 'port=8080\n', '0640'),
      stepResource('web', 'prepare', ['sh', '-c', `echo prepared > ${data}/prepared`]),
      // Exits at once if it ever starts before its prepare step has run.
      processResource('web', 'server', ['sh', '-c', `test -f ${data}/prepared || exit 7; exec sleep 300`], { after: ['web/prepare'] }),
    ]);
    await t.publish(t.declaration(1, [web]));
    await t.startAgent();

    const report = await t.reportWhere('web running', (r) => r.sequence === 1 && r.running.some((m) => m.module === 'web'));
    expect(report.resources.map((r) => [r.key, r.outcome])).toEqual([
      ['web/data', 'applied'],
      ['web/config', 'applied'],
      ['web/prepare', 'applied'],
      ['web/server', 'applied'],
    ]);
    expect(statSync(data).mode & 0o7777).toBe(0o750);
    expect(readFileSync(join(data, 'web.conf'), 'utf8')).toBe('port=8080\n');
    expect(statSync(join(data, 'web.conf')).mode & 0o7777).toBe(0o640);
    const pid = await t.runningPid('web/server');
    expect(readFileSync(`/proc/${pid}/cmdline`, 'utf8')).toContain('sleep\u0000300');
    const server = t.records().find((r) => r.key === 'web/server');
    expect(server).toMatchObject({ restarts: 0, lastExit: null });

    // Data the module wrote; the directory must outlive the declaration that made it.
    writeFileSync(join(data, 'uploaded.bin'), 'user data');
    await t.publish(t.declaration(2, []));
    const empty = await t.reportWhere('the empty declaration applied', (r) => r.sequence === 2);
    expect(empty).toMatchObject({ resources: [], running: [], refusal: null });
    expect(await waitForExit(pid, 10_000)).toBe(true);
    expect(existsSync(join(data, 'web.conf'))).toBe(false);
    expect(readFileSync(join(data, 'uploaded.bin'), 'utf8')).toBe('user data');
    expect(t.records()).toEqual([]);
  });

  it('replaces a process when any field changes, and keeps it through a rename of its key', async () => {
    t = await openAgentTest();
    const sleeper = (extra: Parameters<typeof processResource>[3], name = 'worker', run = ['sleep', '300']) => [assignment('jobs', [processResource('jobs', name, run, extra)])];
    await t.publish(t.declaration(1, sleeper({ env: { MODE: 'one' } })));
    await t.startAgent();
    const first = await t.runningPid('jobs/worker');
    expect(readFileSync(`/proc/${first}/environ`, 'utf8').split('\0')).toContain('MODE=one');

    await t.publish(t.declaration(2, sleeper({ env: { MODE: 'two' } })));
    const second = await t.waitForNewPid('jobs/worker', first);
    expect(isAlive(first)).toBe(false);
    expect(readFileSync(`/proc/${second}/environ`, 'utf8').split('\0')).toContain('MODE=two');

    // The same process under a new key: nothing stops, nothing starts.
    await t.publish(t.declaration(3, sleeper({ env: { MODE: 'two' } }, 'sleeper')));
    await t.reportWhere('the renamed key applied', (r) => r.sequence === 3 && r.resources[0]?.key === 'jobs/sleeper' && r.resources[0].outcome === 'applied');
    expect(t.pidOf('jobs/sleeper')).toBe(second);
    expect(isAlive(second)).toBe(true);

    await t.publish(t.declaration(4, sleeper({ env: { MODE: 'two' }, user: 'nobody' }, 'sleeper')));
    const third = await t.waitForNewPid('jobs/sleeper', second);
    expect(isAlive(second)).toBe(false);
    expect(readFileSync(`/proc/${third}/status`, 'utf8')).toMatch(/^Uid:\s+65534\s/m);

    await t.publish(t.declaration(5, sleeper({ env: { MODE: 'two' }, user: 'nobody' }, 'sleeper', ['sleep', '301'])));
    const fourth = await t.waitForNewPid('jobs/sleeper', third);
    expect(readFileSync(`/proc/${fourth}/cmdline`, 'utf8')).toContain('301');
    expect(isAlive(third)).toBe(false);
  });

  it('writes nothing on a pass that finds everything as declared: not the file, not its records', async () => {
    t = await openAgentTest();
    const data = join(t.root, 'machine', 'quiet');
    await t.publish(t.declaration(1, [assignment('quiet', [directoryResource('quiet', 'data', data), fileResource('quiet', 'config', join(data, 'quiet.conf'), 'x=1\n'), processResource('quiet', 'server', ['sleep', '300'])])]));
    const agent = await t.startAgent();
    await t.reportWhere('quiet applied', (r) => r.sequence === 1 && r.resources.every((x) => x.outcome === 'applied'));
    // A file written again is a new inode (written beside and renamed into place).
    const written = (path: string): string => `${statSync(path).ino}:${statSync(path).mtimeMs}`;
    const before = { config: written(join(data, 'quiet.conf')), records: written(join(t.stateDir, 'records.json')) };
    const passes = agent.status().passes;
    await waitFor('three passes more', () => agent.status().passes >= passes + 3);
    expect({ config: written(join(data, 'quiet.conf')), records: written(join(t.stateDir, 'records.json')) }).toEqual(before);
  });
});

