import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { foldCodeVersion } from '../../src/adapters/fold-version.js';
import { projectRoot } from '../../src/config.js';
import { runMesh } from '../helpers/cli.js';

// `mesh --version` says which mesh code this is: the package's version and the digest of the code
// that folds the log, as the bundle carries them (written in when dist/ was built, no source read).

const version = (JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as { version: string }).version;

describe('mesh --version', () => {
  it("prints the package's version and the fold code's digest, the same as the sources give", async () => {
    for (const flag of ['--version', '-V']) {
      const result = await runMesh([flag]);
      expect(result).toMatchObject({ code: 0, stderr: '' });
      expect(result.stdout).toBe(`mesh ${version} (fold ${foldCodeVersion()})\n`);
    }
  });

  it('gives both fields with --json', async () => {
    const result = await runMesh(['--version', '--json']);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ version, foldVersion: foldCodeVersion() });
  });

  it('refuses anything else beside it, exiting 2', async () => {
    const result = await runMesh(['-V', 'status', '--json']);
    expect(result.code).toBe(2);
    expect(JSON.parse(result.stdout)).toMatchObject({ ok: false, error: { code: 'validation', field: '-V' } });
  });

  it('is listed by mesh --help', async () => {
    expect((await runMesh(['--help'])).stdout).toMatch(/^ {2}-V, --version\s/m);
  });
});
