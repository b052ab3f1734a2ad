import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { posix } from 'node:path';
import { MeshFixture, minimalModule } from '../../tests/helpers/given.js';
import { hostPathProblem, isWithin, placementProblem, relativePathProblem, systemFolderProblem } from './host-paths.js';

// No path leaves the module's place: every path a manifest, a --place or a --root names is refused
// where it enters when it is absolute where it must be relative, is not written as the folder it
// means, or falls in the machine's own folders — in the deciders, so --plan refuses it too.

/** Names as an attacker writes them: dots, empty segments, slashes, unicode, look-alikes of dots. */
const segment = fc.oneof(
  fc.constantFrom('..', '.', '', '...', '.hidden', 'etc', 'data', 'x', '‥', '．．', '..%2f', 'é', '𝔡𝔞𝔱𝔞', 'a b', '~', 'root', 'proc', '\\..'),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 6 }),
);
const relative = fc.array(segment, { minLength: 1, maxLength: 6 }).map((parts) => parts.join('/'));
const absolute = fc.oneof(
  relative.map((p) => `/${p}`),
  fc.constantFrom('/', '//', '/etc', '/etc/', '/usr/local/bin', '/lib64', '/var/lib/mesh', '/var/lib/mesh/.mesh', '/home/alice', '/home/alice/.ssh', '/tmp', '/srv', '/run/x').chain((base) => relative.map((p) => `${base}/${p}`)),
);
const PLACE = '/srv/mesh/web/config';

const SYSTEM_TREES = ['/etc', '/usr', '/bin', '/sbin', '/lib', '/lib64', '/boot', '/dev', '/proc', '/sys', '/root', '/run', '/var/run', '/var/lib/dpkg'];

describe('paths below a place (files[].as)', () => {
  it('joined to its place, an accepted relative path never names anything outside it', () => {
    fc.assert(
      fc.property(relative, (as) => {
        if (relativePathProblem(as) !== undefined) return;
        const joined = `${PLACE}/${as}`;
        expect(posix.normalize(joined)).toBe(joined);
        expect(posix.resolve(PLACE, as).startsWith(`${PLACE}/`)).toBe(true);
      }),
      { numRuns: 3_000 },
    );
  });

  it.each([
    ['../../x', 'contains ".."'],
    ['a/../../b', 'contains ".."'],
    ['/etc/shadow', 'is absolute'],
    ['a//b', 'has an empty segment'],
    ['a/', 'has an empty segment'],
    ['./a', 'has a "." segment'],
    ['.', 'has a "." segment'],
    ['', 'is empty'],
    ['a\nb', 'contains a control character'],
  ])('refuses %j: %s', (as, why) => {
    expect(relativePathProblem(as)).toContain(why);
  });

  it.each(['app.ini', 'conf.d/app.ini', '.env', '...', '‥', 'é/𝔡'])('takes %j', (as) => {
    expect(relativePathProblem(as)).toBeUndefined();
  });
});

describe('host paths (--place, --root, regions)', () => {
  it('an accepted path is written as the folder it means and lies in none of the machine\'s own folders', () => {
    fc.assert(
      fc.property(absolute, fc.constantFrom('place', 'root', 'region' as const), (path, use) => {
        if (hostPathProblem(path, use) !== undefined) return;
        expect(posix.normalize(path)).toBe(path);
        for (const tree of SYSTEM_TREES.filter((t) => !(use === 'region' && t === '/etc'))) expect(isWithin(path, tree)).toBe(false);
        expect(path).not.toBe('/');
      }),
      { numRuns: 3_000 },
    );
  });

  it.each([
    ['/', 'is / (the root of the machine)'],
    ['/etc', 'falls in /etc'],
    ['/etc/ssh/sshd_config', 'falls in /etc'],
    ['/usr/local/bin', 'falls in /usr'],
    ['/lib64/x', 'falls in /lib64'],
    ['/boot', 'falls in /boot'],
    ['/proc/1/root', 'falls in /proc'],
    ['/root/.ssh', 'falls in /root'],
    ['/run/x', 'falls in /run'],
    ['/var/run/docker.sock', 'falls in /var/run'],
    ['/home/alice', "is /home/alice (a user's home)"],
    ['/home/alice/.ssh', "falls in /home/alice/.ssh (a user's own settings)"],
    ['/tmp', 'is /tmp itself'],
    ['/var/lib/mesh', 'is /var/lib/mesh itself'],
    ['/srv/../etc', 'contains ".."'],
    ['/srv//data', 'has an empty segment'],
    ['srv/data', 'is not an absolute path'],
  ])('a place %j %s', (path, why) => {
    expect(hostPathProblem(path, 'place')).toContain(why);
  });

  it.each(['/srv/registry', '/mnt/disk2/registry', '/home/alice/data', '/tmp/x', '/var/lib/mesh/web/data', '/librarian'])('takes the place %j', (path) => {
    expect(hostPathProblem(path, 'place')).toBeUndefined();
  });

  it('lets a region into the files of /etc the machine shares, not those that let someone in', () => {
    expect(hostPathProblem('/etc/hosts', 'region')).toBeUndefined();
    expect(hostPathProblem('/etc/dhcpcd.conf', 'region')).toBeUndefined();
    for (const path of ['/etc/shadow', '/etc/sudoers.d/mesh', '/etc/ssh/sshd_config', '/etc/cron.d/x', '/etc/rc3.d/S01x', '/etc/ld.so.preload', '/etc']) expect(systemFolderProblem(path, 'region')).toMatch(/falls in \/etc/);
    expect(hostPathProblem('/var/lib/mesh/.mesh/vault/secrets/x', 'region')).toContain("the mesh's own");
  });

  it('lets a node root be a folder the machine shares, never one of its own', () => {
    expect(hostPathProblem('/srv', 'root')).toBeUndefined();
    expect(hostPathProblem('/var/lib/mesh', 'root')).toBeUndefined();
    expect(hostPathProblem('/', 'root')).toContain('is /');
    expect(hostPathProblem('/etc/mesh', 'root')).toContain('falls in /etc');
    // the machine's shared memory folder is shared as /tmp is; the rest of /dev is the kernel's
    expect(hostPathProblem('/dev/shm/nodes/lab1', 'root')).toBeUndefined();
    expect(hostPathProblem('/dev/shm', 'place')).toContain('is /dev/shm itself');
    expect(hostPathProblem('/dev/sda', 'root')).toContain("falls in /dev (the kernel's)");
  });

  it('keeps a placed directory out of the node root but for its own module\'s folder', () => {
    const where = { root: '/var/lib/mesh', module: 'web' };
    expect(placementProblem('/var/lib/mesh/web/data', where)).toBeUndefined();
    expect(placementProblem('/var/lib/mesh/web', where)).toContain("outside web's own folder");
    expect(placementProblem('/var/lib/mesh/.mesh', where)).toContain("inside the node's root /var/lib/mesh but outside web's own folder there (/var/lib/mesh/web)");
    expect(placementProblem('/var/lib/mesh/vault/data', where)).toContain("outside web's own folder");
    expect(placementProblem('/srv/mesh/vault', { root: '/srv/mesh', module: 'web' })).toContain("inside the node's root /srv/mesh");
    expect(placementProblem('/var/lib/mesh/agent/alpha', { root: '/srv/mesh', module: 'web' })).toContain("inside the mesh's home /var/lib/mesh");
  });
});

describe('refused where they enter: registration, --place (and --plan), --root', () => {
  const mesh = () => {
    const m = new MeshFixture();
    m.register(minimalModule('web', { requires: [{ name: 'data', contract: 'directory', provider: 'host', owner: 'mallory', mode: '0777' }] }));
    m.node('lab1');
    return m;
  };

  it('refuses a manifest whose file, region, mount, source or output leaves its place, naming each field and path at once', () => {
    const problems = mesh().refusal({
      type: 'register-module',
      manifest: minimalModule('evil', {
        source: { url: 'https://example.org/evil.git', path: '../../etc' },
        requires: [{ name: 'bus', contract: 'mesh-bus', provider: 'module', seat: 'mesh-broker' }, { name: 'config', contract: 'directory', provider: 'host' }],
        resources: {
          directories: [{ requirement: 'config' }],
          files: [{ name: 'x', in: 'config', as: '../../../../tmp/victim/x', template: 'owned' }, { name: 'y', in: 'config', as: '/etc/cron.d/evil', template: '* * * * * root sh' }],
          regions: [{ name: 'r', file: '/etc/sudoers', template: 'mallory ALL=(ALL) NOPASSWD: ALL\n' }],
          containers: [{ name: 'c', image: { upstream: 'busybox' }, mounts: [{ from: 'config', to: '/data/../etc' }] }],
        },
        build: { recipe: 'make', output: '/root/.ssh' },
      }),
    });
    expect(problems.map((p) => `${p.what}: ${p.why}`)).toEqual([
      `resources.files.0.as: "../../../../tmp/victim/x" contains "..": a file stays inside its module's place`,
      `resources.files.1.as: "/etc/cron.d/evil" is absolute: a file stays inside its module's place`,
      expect.stringMatching(/^resources\.regions\.0\.file: "\/etc\/sudoers" falls in \/etc\/sudoers \(it decides who may log in/),
      `resources.containers.0.mounts.0.to: "/data/../etc" contains "..": a mount target is the one folder inside the container it reads as`,
      `source.path: "../../etc" contains "..": a build runs inside its checkout`,
      `build.output: "/root/.ssh" is absolute: the artifact is taken from inside the build folder`,
    ]);
  });

  it.each([
    ['/etc', '"/etc" falls in /etc (the machine\'s configuration)'],
    ['/', '"/" is / (the root of the machine)'],
    ['/srv/../etc', '"/srv/../etc" contains ".."'],
    ['data', '"data" is not an absolute path'],
    ['/var/lib/mesh/.mesh', '"/var/lib/mesh/.mesh" is inside the node\'s root'],
  ])('refuses --place data=%s, with or without --plan (the decider is the plan)', (path, why) => {
    const [problem, ...more] = mesh().refusal({ type: 'assign', module: 'web', node: 'lab1', hold: [], pins: {}, values: {}, placements: { data: path } });
    expect(more).toEqual([]);
    expect(problem).toMatchObject({ what: '--place data', why: expect.stringContaining(why) });
    expect(problem?.why).toContain('a placed directory is made its module\'s');
  });

  it("refuses a place inside or around another module's directory on the node", () => {
    const m = mesh();
    m.register(minimalModule('api', { requires: [{ name: 'data', contract: 'directory', provider: 'host' }] }));
    m.assign('api', 'lab1', { placements: { data: '/srv/shared/api' } });
    const [problem] = m.refusal({ type: 'assign', module: 'web', node: 'lab1', hold: [], pins: {}, values: {}, placements: { data: '/srv/shared' } });
    expect(problem?.why).toBe('"/srv/shared" holds api\'s directory data on lab1 (/srv/shared/api): a directory is one module\'s');
    m.assign('web', 'lab1', { placements: { data: '/srv/web' } });
  });

  it('refuses a node root in the machine\'s own folders', () => {
    const [problem] = new MeshFixture().refusal({ type: 'add-node', node: 'lab9', root: '/etc/mesh' });
    expect(problem).toMatchObject({ what: '--root', why: expect.stringContaining('"/etc/mesh" falls in /etc') });
  });
});
