import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { foldCodeVersion } from '../../src/adapters/fold-version.js';
import { meshHome, projectRoot } from '../../src/config.js';
import { uniqueName } from '../helpers/names.js';

// The package as a machine gets it: `npm pack` in the checkout (its prepack builds dist/ only if a
// source is newer, which the global setup saw to), installed into a prefix of its own from npm's
// cache alone (the tarball carries npm-shrinkwrap.json, the checkout's lockfile), and its `mesh`
// run. Nothing may be built on a run: the installed package has no sources and no build script,
// esbuild is taken out of it before it runs, and its dist/ is the same files, unchanged, after.

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

const run = (command: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = process.env): Promise<Run> =>
  new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });

/** Every file under `dir`, with its size and modification time. */
const filesOf = (dir: string): Record<string, string> =>
  Object.fromEntries(
    readdirSync(dir, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => {
        const path = join(entry.parentPath, entry.name);
        const stat = statSync(path);
        return [path.slice(dir.length + 1), `${stat.size} ${stat.mtimeMs}`];
      }),
  );

const { version } = JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as { version: string };

describe('the package npm pack makes', () => {
  it('installs from the cache into a prefix, and its mesh answers --version, --help and a read, building nothing', async () => {
    const dir = join(meshHome(), 'tmp', uniqueName('package-'));
    mkdirSync(dir, { recursive: true });
    try {
      const packed = await run('npm', ['pack', '--json', '--pack-destination', dir], projectRoot);
      expect(packed.code).toBe(0);
      const [tarball] = JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[];
      const paths = tarball?.files.map((file) => file.path) ?? [];
      // What runs and what it reads, not the sources, the tests or the build script.
      expect(paths).toEqual(expect.arrayContaining(['bin/mesh.js', 'bin/fold-version.js', 'dist/mesh.mjs', 'dist/build.json', 'npm-shrinkwrap.json', 'migrations/nodes/v1.sql', 'fixtures/modules/nats.json', 'src/controller/http/console/assets/console.css']));
      expect(paths.filter((path) => /\.tsx?$/.test(path) && !path.endsWith('.d.ts'))).toEqual([]);
      expect(paths.filter((path) => /^(tests|scripts|bench|docs)\//.test(path) || path === 'dist/meta.json')).toEqual([]);
      expect(existsSync(join(projectRoot, 'npm-shrinkwrap.json'))).toBe(false);

      const prefix = join(dir, 'prefix');
      const installed = await run('npm', ['install', '--prefix', prefix, '--offline', '--no-audit', '--no-fund', join(dir, tarball?.filename ?? '')], dir);
      expect({ code: installed.code, stderr: installed.code === 0 ? '' : installed.stderr }).toEqual({ code: 0, stderr: '' });
      const home = join(prefix, 'node_modules', 'mesh-control-plane');
      expect(readdirSync(home).sort()).toEqual(['README.md', 'bin', 'dist', 'fixtures', 'migrations', 'npm-shrinkwrap.json', 'package.json', 'src']);
      expect(existsSync(join(home, 'src', 'cli'))).toBe(false);
      // Whatever tried to build now would find no esbuild to build with.
      for (const tool of ['esbuild', '@esbuild']) rmSync(join(prefix, 'node_modules', tool), { recursive: true, force: true });
      const before = filesOf(join(home, 'dist'));

      const mesh = join(prefix, 'node_modules', '.bin', 'mesh');
      const versionRun = await run(mesh, ['--version'], dir);
      expect(versionRun).toEqual({ code: 0, stdout: `mesh ${version} (fold ${foldCodeVersion()})\n`, stderr: '' });
      const help = await run(mesh, ['--help'], dir);
      expect({ code: help.code, stderr: help.stderr }).toEqual({ code: 0, stderr: '' });
      expect(help.stdout).toMatch(/^ {2}node show <name>/m);
      // A read of the test stack's mesh, from the installed files: its implementation, pg and NATS load from dist/.
      const seats = await run(mesh, ['seats', '--json'], dir);
      expect({ code: seats.code, stderr: seats.stderr }).toEqual({ code: 0, stderr: '' });
      expect((JSON.parse(seats.stdout) as { seats: { seat: string }[] }).seats.map((s) => s.seat)).toContain('mesh-controller');

      expect(filesOf(join(home, 'dist'))).toEqual(before);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
