import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../../src/config.js';
import { isAlive } from '../../src/dev/processes.js';
import { openAgentMesh, type AgentMesh } from '../helpers/agent-mesh.js';
import { waitFor } from '../helpers/test-mesh.js';

// Services keep the state they were found in (ADR 0118, issue 130 of the seeds). A real agent acts
// on the units of a service manager of the test's own (tests/helpers/test-supervisor.sh, which
// answers systemctl's verbs and runs real processes): a unit found running is left running when
// undeclared, one the mesh started is stopped and disabled again, a renamed id stops nothing, and
// a changed setting reloads a running unit without restarting it.

const SUPERVISOR = join(projectRoot, 'tests', 'helpers', 'test-supervisor.sh');

describe('a service from the manifest to the machine and back', () => {
  let m: AgentMesh;
  let units: string;
  const ctl = (...args: string[]): string => execFileSync('sh', [SUPERVISOR, units, ...args], { encoding: 'utf8' });
  const journal = (unit: string): string[] => (existsSync(join(units, 'journal', unit)) ? readFileSync(join(units, 'journal', unit), 'utf8').trim().split('\n') : []);
  const pidOf = (unit: string): number | undefined => (existsSync(join(units, 'run', `${unit}.pid`)) ? Number(readFileSync(join(units, 'run', `${unit}.pid`), 'utf8')) : undefined);
  const running = (unit: string): boolean => {
    const pid = pidOf(unit);
    return pid !== undefined && isAlive(pid);
  };
  const manifest = (version: { greeting: string; filterName: string }) => ({
    name: 'runtime-user',
    requires: [{ name: 'config', contract: 'directory', provider: 'host' }],
    resources: {
      directories: [{ requirement: 'config' }],
      files: [{ name: 'daemon-json', in: 'config', as: 'daemon.json', template: `{ "greeting": "${version.greeting}" }\n` }],
      services: [
        // The container runtime: the machine's, found running; the module only needs it to read its setting.
        { name: 'runtime', unit: 'runtime.service', state: 'running', reloadOn: ['daemon-json'] },
        // The packet filter: the mesh starts and enables it.
        { name: version.filterName, unit: 'filter.service', state: 'running', enabled: true },
        // sshd: declared with no state, its lifecycle is the machine's.
        { name: 'sshd', unit: 'sshd.service' },
      ],
    },
  });

  beforeAll(async () => {
    m = await openAgentMesh();
    units = join(m.root, 'supervisor');
    mkdirSync(join(units, 'units'), { recursive: true });
    for (const unit of ['runtime.service', 'filter.service', 'sshd.service']) writeFileSync(join(units, 'units', unit), 'exec sleep 600');
    ctl('start', 'runtime.service');
    ctl('enable', 'runtime.service');
    await m.addNode('alpha');
    await m.startAgent('alpha', { serviceManager: ['sh', SUPERVISOR, units] });
    await m.eventWhere('fact', 'fact.capabilities', (e) => (e.data as { capabilities: string[] }).capabilities.includes('service'));
  });
  afterAll(async () => {
    for (const unit of ['runtime.service', 'filter.service', 'sshd.service']) if (units) ctl('stop', unit);
    await m?.close();
  });

  it('refuses a service naming a unit twice or reloading on what the module does not write, appending nothing', async () => {
    const head = await m.quietHead();
    const bad = manifest({ greeting: 'hi', filterName: 'filter' });
    bad.resources.services.push({ name: 'again', unit: 'runtime.service', state: 'running', reloadOn: ['app-ini'] });
    await expect(m.t.run({ type: 'register-module', manifest: bad })).rejects.toThrow(/resources\.services\.3\.unit[\s\S]*runtime\.service is already resources\.services\.0\.unit[\s\S]*resources\.services\.3\.reloadOn\.0[\s\S]*"app-ini" is no file or region of this module \(it has daemon-json\)/);
    await expect(m.t.run({ type: 'register-module', manifest: { ...bad, resources: { services: [{ name: 'x', unit: 'docker service; rm -rf /' }] } } })).rejects.toThrow(/a unit is a name the service manager knows/);
    expect(await m.logHead()).toBe(head);
  });

  it('starts and enables what the declaration says, leaves the unit found running as it runs, touches no unit with no state', async () => {
    const runtimePid = pidOf('runtime.service');
    await m.t.run({ type: 'register-module', manifest: manifest({ greeting: 'hello', filterName: 'filter' }) });
    await m.assign('runtime-user', 'alpha');
    await m.eventWhere('fact', 'fact.applied', (e) => (e.data as { module: string }).module === 'runtime-user');
    expect(running('filter.service')).toBe(true);
    expect(journal('filter.service')).toEqual(['start', 'enable']);
    expect(journal('runtime.service')).toEqual(['start', 'enable']);
    expect(pidOf('runtime.service')).toBe(runtimePid);
    expect(journal('sshd.service')).toEqual([]);
  }, 60_000);

  it('a changed setting reloads the running unit, never restarting it; a renamed id stops nothing', async () => {
    const filterPid = pidOf('filter.service');
    const runtimePid = pidOf('runtime.service');
    await m.t.run({ type: 'register-module', manifest: manifest({ greeting: 'bonjour', filterName: 'packet-filter' }) });
    await waitFor('the runtime reloaded', async () => journal('runtime.service').includes('reload'));
    await m.eventWhere('fact', 'fact.applied', (e) => (e.data as { module: string; version: { definitionVersion: number } }).module === 'runtime-user' && (e.data as { version: { definitionVersion: number } }).version.definitionVersion === 2);
    expect(journal('runtime.service')).toEqual(['start', 'enable', 'reload']);
    expect(pidOf('runtime.service')).toBe(runtimePid);
    expect(journal('filter.service')).toEqual(['start', 'enable']);
    expect(pidOf('filter.service')).toBe(filterPid);
    expect(running('filter.service')).toBe(true);
  }, 60_000);

  it('unassigned: the unit found running is left running and enabled, the one the mesh started is stopped and disabled', async () => {
    ctl('start', 'sshd.service');
    await m.t.run({ type: 'unassign', module: 'runtime-user', node: 'alpha' });
    await waitFor('the filter stopped', async () => !running('filter.service'));
    await m.eventWhere('fact', 'fact.stopped', (e) => (e.data as { module: string }).module === 'runtime-user');
    expect(journal('filter.service')).toEqual(['start', 'enable', 'stop', 'disable']);
    expect(running('runtime.service')).toBe(true);
    expect(journal('runtime.service')).toEqual(['start', 'enable', 'reload']);
    expect(ctl('is-enabled', 'runtime.service').trim()).toBe('enabled');
    // With no state, the machine's: the mesh neither started it nor stops it.
    expect(journal('sshd.service')).toEqual(['start']);
    expect(running('sshd.service')).toBe(true);
  }, 60_000);
});
