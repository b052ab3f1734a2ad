import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { lchownSync, mkdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { isWithin } from '../../src/domain/host-paths.js';
import { pathGuard, type PathGuard } from '../../src/agent/path-guard.js';
import { meshHome } from '../../src/config.js';
import { uniqueName } from '../helpers/names.js';

// The agent's own check, against a real folder full of the links a module's process could leave
// in its directory: to its parent, outside, to /etc, to /, to the agent's state, dangling, in a
// chain, and one made by another user. Whatever path is generated over them, one the guard lets
// through lands — as the kernel resolves it — inside the module's place.

const isRoot = process.getuid?.() === 0;

describe('the agent follows every link before it touches a path', () => {
  const top = join(meshHome(), 'tmp', uniqueName('guard-'));
  const place = join(top, 'mod', 'config');
  const state = join(top, 'state');
  let guard: PathGuard;

  beforeAll(() => {
    mkdirSync(join(place, 'sub', 'deeper'), { recursive: true });
    mkdirSync(join(top, 'outside'), { recursive: true });
    mkdirSync(state, { recursive: true });
    writeFileSync(join(place, 'app.ini'), 'x');
    const links: [string, string][] = [
      ['up', '..'],
      ['top', '../..'],
      ['abs', join(top, 'outside')],
      ['etc', '/etc'],
      ['root', '/'],
      ['state', '../../state'],
      ['self', '.'],
      ['inner', 'sub'],
      ['deep', 'sub/deeper'],
      ['dangling', join(top, 'nowhere')],
      ['chain', 'up/../../outside'],
      ['loop', 'loop'],
      ['shadow', '/etc/shadow'],
    ];
    for (const [name, target] of links) symlinkSync(target, join(place, name));
    symlinkSync('../up', join(place, 'sub', 'back'));
    // One a module's own user made: not followed, whatever it points at.
    symlinkSync('sub', join(place, 'theirs'));
    if (isRoot) lchownSync(join(place, 'theirs'), 65534, 65534);
    guard = pathGuard(state);
  });
  afterAll(() => rmSync(top, { recursive: true, force: true }));

  /** Where the kernel puts a path: the real path of the nearest part of it that exists, and the rest as written. */
  const kernel = (path: string): string => {
    const rest: string[] = [];
    for (let at = path; ; at = dirname(at)) {
      try {
        return join(realpathSync(at), ...rest);
      } catch {
        rest.unshift(at.slice(dirname(at).length).replace(/^\//, ''));
      }
    }
  };

  const segment = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom('up', 'top', 'abs', 'etc', 'root', 'state', 'self', 'inner', 'deep', 'dangling', 'chain', 'loop', 'shadow', 'theirs', 'sub', 'back', 'app.ini', 'new') },
    { weight: 2, arbitrary: fc.constantFrom('..', '.', '', 'é', '𝔡', '‥', '．．') },
    { weight: 1, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 4 }) },
  );

  it('no path it lets through lands outside the module\'s place, in a system folder or in its state', () => {
    const realPlace = realpathSync(place);
    fc.assert(
      fc.property(fc.array(segment, { minLength: 1, maxLength: 5 }), (parts) => {
        const path = `${place}/${parts.join('/')}`;
        const checked = guard.check(path, 'place', place);
        if (!checked.ok) return;
        const landed = kernel(path);
        expect(checked.resolved).toBe(landed);
        expect(isWithin(landed, realPlace)).toBe(true);
        expect(isWithin(landed, realpathSync(state))).toBe(false);
      }),
      { numRuns: 3_000 },
    );
  });

  it.each([
    ['abs/x', /resolves to .*\/outside\/x, which is outside its place/],
    ['up/x', /resolves to .*\/mod\/x, which is outside its place/],
    ['chain/x', /outside\/x, which is outside its place/],
    ['etc/cron.d/x', /resolves to \/etc\/cron\.d\/x, which falls in \/etc/],
    ['root/x', /resolves to \/x, which is outside its place/],
    ['shadow', /resolves to \/etc\/shadow, which falls in \/etc/],
    ['state/records.json', /the agent's state folder/],
    ['dangling/x', /nowhere\/x, which is outside its place/],
    ['loop/x', /more than 40 symbolic links/],
    ['../x', /contains "\.\."/],
  ])('refuses %s, naming where it lands', (rest, why) => {
    const checked = guard.check(`${place}/${rest}`, 'place', place);
    expect(checked.ok).toBe(false);
    expect(checked.ok ? '' : checked.why).toMatch(why);
  });

  (isRoot ? it : it.skip)('refuses a link another user made, whatever it points at', () => {
    const checked = guard.check(`${place}/theirs/x`, 'place', place);
    expect(checked).toEqual({ ok: false, why: `${place}/theirs is a symbolic link made by user 65534, and the agent follows only root's or its own` });
  });

  it.each(['app.ini', 'inner/x', 'deep/y', 'sub/back/config/app.ini', 'self/sub/new'])('takes %s, a link that stays inside', (rest) => {
    expect(guard.check(`${place}/${rest}`, 'place', place)).toMatchObject({ ok: true });
  });
});
