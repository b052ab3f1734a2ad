import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sha256Digest } from '../../src/domain/canonical.js';
import { openAgentMesh, type AgentMesh } from '../helpers/agent-mesh.js';
import { handBackAsked, routedModule } from '../helpers/routes.js';
import { waitFor } from '../helpers/test-mesh.js';
import { WORKSTATION_HOSTS } from '../helpers/workstation-hosts.js';

// Issue 111 and ADR 0120 of the seeds: a resolver is given the machines, a hosts region the names
// the mesh serves — the machines and each public name at the address of the proxy serving it. The
// mesh hands the lists, the module writes the line. Against a controller and a real agent on the
// workstation: the region and the zone file as written on its disk, and each change re-declaring
// exactly the modules whose filled values changed.

const NAMES_LINE = '${each:names}${entry:address} ${entry:name}\n${end:each}';
const ZONE_LINE = '# the mesh\'s machines\n${each:machines}address=/${entry:name}.mesh/${entry:address}\n${end:each}';

describe('the roster: the machines for a resolver, the names the mesh serves for a hosts region', () => {
  let m: AgentMesh;
  let hosts: string;
  const zones = (): string => join(m.root, 'nodes', 'ws', 'resolver', 'conf', 'zones.conf');
  const read = (path: string): string | undefined => (existsSync(path) ? readFileSync(path, 'latin1') : undefined);
  const hostsModule = (template: string) => ({ name: 'hosts-names', resources: { regions: [{ name: 'hosts', file: hosts, template }] } });
  const resolverModule = {
    name: 'resolver',
    requires: [{ name: 'conf', contract: 'directory', provider: 'host', mode: '0755' }],
    resources: { directories: [{ requirement: 'conf' }], files: [{ name: 'zones', in: 'conf', as: 'zones.conf', template: ZONE_LINE, mode: '0644' }] },
  };
  const addNode = (node: string, address: string) => m.t.run({ type: 'add-node', node, root: join(m.root, 'nodes', node), address });
  const assign = (module: string, node: string, hold: string[] = []) => m.t.run({ type: 'assign', module, node, hold, pins: {}, values: {}, placements: {} });
  const digests = async (node: string) => new Map((await m.t.declarationOf(node))?.assignments.map((a) => [a.module, sha256Digest(a)]));
  const region = (lines: string[]) => `# BEGIN mesh hosts-names/hosts\n${lines.join('\n')}\n# END mesh hosts-names/hosts\n`;

  beforeAll(async () => {
    m = await openAgentMesh();
    hosts = join(m.root, 'machine', 'etc', 'hosts');
    mkdirSync(join(m.root, 'machine', 'etc'), { recursive: true });
    writeFileSync(hosts, WORKSTATION_HOSTS);
  });
  afterAll(async () => m?.close());

  it('refuses a roster block that could not be filled, naming each problem, appending nothing', async () => {
    const head = await m.quietHead();
    const problems = [
      ['${each:nodes}x${end:each}', 'names no list of the roster'],
      ['${each:names}${entry:name}', 'is never closed'],
      ['${entry:address}', 'stands outside any ${each:…} block'],
      ['${each:names}${entry:fqdn}${end:each}', 'reads a field an entry lacks'],
      ['${each:names}${each:machines}${end:each}${end:each}', 'blocks do not nest'],
    ];
    for (const [template, why] of problems) await expect(m.t.run({ type: 'register-module', manifest: hostsModule(template ?? '') })).rejects.toThrow(why);
    const inRun = { name: 'hosts-names', resources: { processes: [{ name: 'p', run: ['x', '${each:names}${entry:name}${end:each}'] }] } };
    await expect(m.t.run({ type: 'register-module', manifest: inRun })).rejects.toThrow(/resources\.processes\.0\.run\.1.*a roster block .* is no file's or region's template/s);
    expect(await m.logHead()).toBe(head);
  });

  it('writes the machines into the resolver’s zone file and the served names into the hosts region; a change re-declares exactly what it changed', async () => {
    await m.t.run({ type: 'register-module', manifest: { name: 'test-proxy', provides: [{ provision: 'route' }], canHold: ['mesh-proxy'] } });
    await m.t.run({ type: 'register-module', manifest: { name: 'plain', resources: { processes: [{ name: 'idle', run: ['node', '-e', 'setInterval(() => {}, 1 << 30)'] }] } } });
    await m.t.run({ type: 'register-module', manifest: hostsModule(NAMES_LINE) });
    await m.t.run({ type: 'register-module', manifest: resolverModule });
    await m.t.run({ type: 'register-module', manifest: routedModule('shop') });
    await addNode('ws', '10.0.0.5');
    await addNode('edge', '10.0.0.1');
    await addNode('lab', '10.0.0.2');
    await addNode('quiet', '10.0.0.9');
    await m.t.run({ type: 'set-node-domain', node: 'lab', domain: 'lab.example' });
    await assign('test-proxy', 'edge', ['mesh-proxy']);
    m.t.startProviderAnswers();
    const proxy = { node: 'edge', module: 'test-proxy' };
    await assign('plain', 'quiet');
    await m.startAgent('ws');
    await assign('hosts-names', 'ws');
    await assign('resolver', 'ws');

    const machines = ['10.0.0.1 edge', '10.0.0.2 lab', '10.0.0.9 quiet', '10.0.0.5 ws'];
    await waitFor('the hosts region written', async () => read(hosts)?.includes('# END mesh'));
    expect(read(hosts)).toBe(`${WORKSTATION_HOSTS}${region(machines)}`);
    await waitFor('the zone file written', async () => read(zones()) !== undefined);
    const zoneText = "# the mesh's machines\naddress=/edge.mesh/10.0.0.1\naddress=/lab.mesh/10.0.0.2\naddress=/quiet.mesh/10.0.0.9\naddress=/ws.mesh/10.0.0.5\n";
    expect(read(zones())).toBe(zoneText);

    // A route granted on lab: a name the mesh serves, at the proxy's address — the hosts region
    // has it, the resolver (machines only) is not declared anything new, and a node whose modules
    // read no roster is not declared again.
    const before = await digests('ws');
    const quiet = (await m.t.declarationOf('quiet'))?.sequence;
    await assign('shop', 'lab');
    // Asked of the proxy, not yet handed back: not a name the mesh serves.
    expect(read(hosts)).not.toContain('shop.');
    await handBackAsked(m.t, proxy);
    await waitFor('the public name in the region', async () => read(hosts)?.includes('10.0.0.1 shop.lab.example\n'));
    expect(read(hosts)).toBe(`${WORKSTATION_HOSTS}${region(['10.0.0.1 edge', '10.0.0.2 lab', '10.0.0.9 quiet', '10.0.0.1 shop.lab.example', '10.0.0.5 ws'])}`);
    const granted = await digests('ws');
    expect(granted.get('hosts-names')).not.toBe(before.get('hosts-names'));
    expect(granted.get('resolver')).toBe(before.get('resolver'));
    expect(read(zones())).toBe(zoneText);
    expect((await m.t.declarationOf('quiet'))?.sequence).toBe(quiet);

    // The domain of lab changed: the name moves with it, and only the hosts region says so.
    await m.t.run({ type: 'set-node-domain', node: 'lab', domain: 'moved.example' });
    await handBackAsked(m.t, proxy);
    await waitFor('the moved name in the region', async () => read(hosts)?.includes('shop.moved.example'));
    expect(read(hosts)).not.toContain('shop.lab.example');
    expect((await digests('ws')).get('resolver')).toBe(before.get('resolver'));

    // A machine joins: both lists have it, so both modules are declared it.
    const moved = await digests('ws');
    await addNode('new', '10.0.0.7');
    await waitFor('the new machine in the zone file', async () => read(zones())?.includes('address=/new.mesh/10.0.0.7\n'));
    await waitFor('the new machine in the region', async () => read(hosts)?.includes('10.0.0.7 new\n'));
    const joined = await digests('ws');
    expect(joined.get('resolver')).not.toBe(moved.get('resolver'));
    expect(joined.get('hosts-names')).not.toBe(moved.get('hosts-names'));
    expect((await m.t.declarationOf('quiet'))?.sequence).toBe(quiet);

    // The route's module unassigned: its name is served no more.
    await m.t.run({ type: 'unassign', module: 'shop', node: 'lab' });
    await waitFor('the name gone from the region', async () => !read(hosts)?.includes('shop.'));
    expect(read(hosts)).toBe(`${WORKSTATION_HOSTS}${region(['10.0.0.1 edge', '10.0.0.2 lab', '10.0.0.7 new', '10.0.0.9 quiet', '10.0.0.5 ws'])}`);
  }, 60_000);
});
