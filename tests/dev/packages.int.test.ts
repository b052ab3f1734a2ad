import { describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { projectRoot } from '../../src/config.js';

// A server that is missing and cannot be installed by this process is refused with the exact
// command to run. Checked as an unprivileged user, the case where apt-get cannot be used.

describe('a missing server package', () => {
  it('is refused with the exact apt-get command when this process may not install it', () => {
    const script = join(projectRoot, 'tests', 'dev', 'fixtures', 'ensure-missing-package.ts');
    const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;
    const [command, args] = asRoot
      ? ['runuser', ['-u', 'nobody', '--', process.execPath, '--import', 'tsx', script]]
      : [process.execPath, ['--import', 'tsx', script]];
    const result = spawnSync(command, args, { cwd: projectRoot, encoding: 'utf8', env: { ...process.env, HOME: '/tmp' } });
    expect(result.stdout + result.stderr).toContain("run: sudo sh -c 'apt-get update && apt-get install -y mesh-no-such-package'");
    expect(result.status).toBe(3);
  });
});
