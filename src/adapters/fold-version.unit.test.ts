import { describe, expect, it } from '@jest/globals';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { meshHome, projectRoot } from '../config.js';
import { foldSourceFiles, foldVersionDefine } from '../../bin/fold-version.js';
import { foldCodeVersion } from './fold-version.js';

// The fold's code version is computed from the source files when running from source, and written
// into the bundle when scripts/build-cli.js builds it: the two must agree, or a controller run from the
// bundle would ignore every snapshot a test (or tsx) wrote, and the other way round.

/** `src/adapters/fold-version.ts` bundled as scripts/build-cli.js bundles the CLI, with `define` as given; its foldCodeVersion(). */
const bundled = async (define: Record<string, string>): Promise<string> => {
  const dir = join(meshHome(), 'tmp', `fold-version-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  const outfile = join(dir, `fold-version-${Object.values(define)[0]?.length ?? 0}-${Date.now()}.mjs`);
  try {
    await build({ entryPoints: [join(projectRoot, 'src', 'adapters', 'fold-version.ts')], bundle: true, platform: 'node', format: 'esm', target: 'node20', packages: 'external', define, outfile, logLevel: 'error' });
    const module = (await import(pathToFileURL(outfile).href)) as { foldCodeVersion: () => string };
    return module.foldCodeVersion();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
};

describe("the fold's code version", () => {
  it('is the same from the source files as the bundle step writes into the bundle', async () => {
    const fromSource = foldCodeVersion();
    expect(fromSource).toMatch(/^[0-9a-f]{64}$/);
    expect(await bundled(foldVersionDefine(projectRoot))).toBe(fromSource);
  });

  it("covers every slice's state and the event registry, and not the deciders or the bus users", () => {
    const files = foldSourceFiles(projectRoot);
    const slices = readdirSync(join(projectRoot, 'src', 'domain'), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => `src/domain/${entry.name}/state.ts`)
      .filter((path) => readdirSync(join(projectRoot, path, '..')).includes('state.ts'));
    expect(slices.length).toBeGreaterThanOrEqual(8);
    expect(files).toEqual(expect.arrayContaining([...slices, 'src/domain/mesh/state.ts', 'src/domain/registry.ts', 'src/domain/events/registry.ts']));
    expect(files).not.toContain('src/domain/mesh/commands.ts');
    expect(files).not.toContain('src/domain/bus/users.ts');
  });

  it('is what the bundle carries, not what the files beside it say', async () => {
    expect(await bundled({ MESH_FOLD_VERSION: JSON.stringify('carried') })).toBe('carried');
  });
});
