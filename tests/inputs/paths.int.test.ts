import { describe, expect, it } from '@jest/globals';
import { operatorCliMesh } from '../helpers/cli.js';
import { minimalModule } from '../helpers/given.js';
import { uniqueName } from '../helpers/names.js';
import { testNatsUrl } from '../helpers/log.js';
import { loadOperatorKey } from '../../src/adapters/operator-keys.js';
import { probePaths } from '../../src/dev/probes/paths.js';
import { identityFromEnv } from '../../src/adapters/nats/connect.js';

// Through the CLI against the real servers: a path that would leave the module's place is refused
// where it enters — a manifest's file, a --path, a --place (planned or not), a node's --root —
// naming the field and the path, exit 3, and nothing appended.

describe('no path leaves the module\'s place, from the command line', () => {
  const { m, head, mesh, manifestFile, refused } = operatorCliMesh('paths-');
  let placed: { module: string; node: string } | undefined;

  it('refuses a manifest whose file escapes its directory, or whose --path leaves the checkout', async () => {
    const name = uniqueName('escape');
    const manifest = minimalModule(name, {
      requires: [{ name: 'bus', contract: 'mesh-bus', provider: 'module', seat: 'mesh-broker' }, { name: 'config', contract: 'directory', provider: 'host' }],
      resources: { directories: [{ requirement: 'config' }], files: [{ name: 'x', in: 'config', as: '../../../../tmp/victim/x', template: 'owned\n' }] },
    });
    const stderr = await refused(['module', 'register', manifestFile(manifest)], 3);
    expect(stderr).toContain(`registering module ${name} refused`);
    expect(stderr).toContain(`resources.files.0.as: "../../../../tmp/victim/x" contains "..": a file stays inside its module's place`);
    const viaPath = await refused(['module', 'register', manifestFile(minimalModule(uniqueName('mono'))), '--source', 'https://example.org/mono.git', '--path', '../outside'], 3);
    expect(viaPath).toContain('source.path: "../outside" contains "..": a build runs inside its checkout');
  });

  it('refuses --place on the machine\'s own folders, planned or not, appending nothing', async () => {
    const name = uniqueName('placed');
    const node = uniqueName('lab');
    const manifest = minimalModule(name, { requires: [{ name: 'data', contract: 'directory', provider: 'host', owner: 'nobody', mode: '0777' }] });
    expect((await mesh('module', 'register', manifestFile(manifest))).code).toBe(0);
    expect((await mesh('node', 'add', node)).code).toBe(0);
    // Each reason is the decider's (src/domain/host-paths.unit.test.ts has them all); here, that --plan refuses as the command does.
    for (const plan of [['--plan'], []]) {
      const stderr = await refused(['assign', name, node, '--place', 'data=/etc', ...plan], 3);
      expect(stderr).toContain(`assigning ${name} to ${node} refused`);
      expect(stderr).toContain(`--place data: "/etc" falls in /etc (the machine's configuration): a placed directory is made its module's`);
    }
    placed = { module: name, node };
    // A folder of its own is taken, planned first.
    const planned = await mesh('assign', name, node, '--place', 'data=/srv/placed/data', '--plan');
    expect({ code: planned.code, stderr: planned.stderr }).toEqual({ code: 0, stderr: '' });
  });

  it('refuses a node root in the machine\'s own folders', async () => {
    expect(await refused(['node', 'add', uniqueName('lab'), '--root', '/usr/lib/mesh'], 3)).toContain('--root: "/usr/lib/mesh" falls in /usr');
  });

  it('the security probe\'s path attacks are each refused by the controller, naming the path, and append nothing', async () => {
    const key = loadOperatorKey(m.env.MESH_OPERATOR_KEY as string);
    const before = await head();
    // The commands are the operator's, signed; the test's bus knows the harness's principal, which speaks for the CLI too.
    const harness = identityFromEnv();
    const outcomes = await probePaths({
      url: testNatsUrl(),
      wire: { prefix: m.t.names.prefix },
      operator: { name: key.operator, key },
      // a module of the probe's own, registered in the same plan, placed on the test's node
      place: { node: placed?.node ?? 'none', requirement: 'data' },
      ...(harness ? { connectAs: harness } : {}),
    });
    expect(outcomes).toHaveLength(5);
    for (const outcome of outcomes) expect(outcome).toMatchObject({ refused: true, detail: expect.stringMatching(/^refused \(refused\): /) });
    expect(outcomes.map((o) => o.detail)).toEqual([
      expect.stringContaining('resources.files.0.as: "../../../../tmp/victim/x" contains ".."'),
      expect.stringContaining('resources.regions.0.file: "/etc/sudoers" falls in /etc/sudoers'),
      expect.stringContaining('--place data: "/etc" falls in /etc'),
      expect.stringContaining('--place data: "/" is /'),
      expect.stringContaining('--place data: "/var/lib/mesh/.mesh" is inside'),
    ]);
    expect(await head()).toBe(before);
  });
});
