import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Agent } from '../../src/agent/agent.js';
import { openAgentMesh, type AgentMesh } from '../helpers/agent-mesh.js';
import { waitFor } from '../helpers/test-mesh.js';
import { WORKSTATION_HOSTS } from '../helpers/workstation-hosts.js';

// Shared files are regions (ADR 0102, issue 128 of the seeds): the mesh writes the names it serves
// into a workstation's hosts file as a marked region, keeps every other line byte for byte, and
// takes only its region out again. A node whose agent has not said it writes regions is not sent
// one: its declaration is withheld, and the refusal names the region and the capability.

const HOSTS = `${WORKSTATION_HOSTS}192.168.1.5 nas   # by hand, no newline at the end`;

describe('a region of a shared file, from the manifest to the machine and back', () => {
  let m: AgentMesh;
  let hosts: string;
  let older: Agent | undefined;
  const names = (file: string) => ({
    name: 'names',
    resources: { regions: [{ name: 'hosts', file, template: '127.0.0.1 registry.internal\n127.0.0.1 ${identity.node}.mesh\n' }] },
    requires: [{ name: 'identity', contract: 'identity', provider: 'mesh' }],
  });

  beforeAll(async () => {
    m = await openAgentMesh();
    hosts = join(m.root, 'machine', 'etc', 'hosts');
    mkdirSync(join(m.root, 'machine', 'etc'), { recursive: true });
    writeFileSync(hosts, HOSTS);
    await m.addNode('alpha');
  });
  afterAll(async () => m?.close());

  it('refuses a region whose file is not an absolute path, appending nothing', async () => {
    const head = await m.quietHead();
    await expect(m.t.run({ type: 'register-module', manifest: names('etc/hosts') })).rejects.toThrow(/resources\.regions\.0\.file.*a shared file is an absolute path on the machine, e\.g\. \/etc\/hosts/s);
    await expect(m.t.run({ type: 'register-module', manifest: { ...names(hosts), resources: { regions: [{ name: 'hosts', file: hosts, template: '${nowhere}' }] } } })).rejects.toThrow(/nowhere/);
    expect(await m.logHead()).toBe(head);
  });

  it('withholds the declaration from a node whose agent has not reported the capability, naming the region', async () => {
    older = await m.startAgent('alpha', { capabilities: [] });
    await m.eventWhere('fact', 'fact.capabilities', (e) => (e.data as { capabilities: string[] }).capabilities.length === 0);
    await m.t.run({ type: 'register-module', manifest: names(hosts) });
    await m.assign('names', 'alpha');
    const refusal = await m.eventWhere('node', 'declaration.refused', (e) => (e.data as { node: string }).node === 'alpha');
    expect(refusal.data).toMatchObject({
      node: 'alpha',
      unresolved: [{ what: 'alpha/names names/hosts', why: expect.stringContaining('has not reported the capability "region"'), remedy: expect.stringContaining('applies region resources') }],
    });
    expect((await m.t.declarationOf('alpha'))?.assignments ?? []).toEqual([]);
    expect(readFileSync(hosts, 'latin1')).toBe(HOSTS);
  }, 60_000);

  it('sends it once the agent reports the capability: the region is written and every other byte kept', async () => {
    if (older) await m.stopAgent(older);
    await m.startAgent('alpha');
    const stated = await m.eventWhere('fact', 'fact.capabilities', (e) => (e.data as { capabilities: string[] }).capabilities.includes('region'));
    expect(stated.data).toEqual({ node: 'alpha', capabilities: expect.arrayContaining(['region']) });
    const region = '# BEGIN mesh names/hosts\n127.0.0.1 registry.internal\n127.0.0.1 alpha.mesh\n# END mesh names/hosts\n';
    await waitFor('the region written', async () => readFileSync(hosts, 'latin1').includes(region));
    expect(readFileSync(hosts, 'latin1')).toBe(`${HOSTS}\n${region}`);
    await m.eventWhere('fact', 'fact.applied', (e) => (e.data as { module: string }).module === 'names');
    // Heartbeats go on; the capabilities are stated once while they stay the same.
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await m.events('fact')).filter((e) => e.type === 'fact.capabilities' && (e.data as { capabilities: string[] }).capabilities.includes('region'))).toHaveLength(1);
  }, 60_000);

  it('another tool rewriting its block is left alone; unassigned, the region goes and nothing else does', async () => {
    const now = readFileSync(hosts, 'latin1');
    writeFileSync(hosts, now.replace('127.0.0.1 web.test api.test\n', '127.0.0.1 web.test api.test blog.test\n'), { encoding: 'latin1' });
    await m.t.run({ type: 'unassign', module: 'names', node: 'alpha' });
    await waitFor('the region removed', async () => !readFileSync(hosts, 'latin1').includes('BEGIN mesh'));
    expect(readFileSync(hosts, 'latin1')).toBe(`${HOSTS.replace('127.0.0.1 web.test api.test\n', '127.0.0.1 web.test api.test blog.test\n')}\n`);
  }, 60_000);
});
