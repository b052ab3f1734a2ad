import { spawn } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect } from '@jest/globals';
import { meshHome, projectRoot } from '../../src/config.js';
import { testNatsUrl } from './log.js';
import { uniqueName } from './names.js';
import { openTestMesh, type TestMesh } from './test-mesh.js';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `mesh …` as an operator would, in a child process. `env` is laid over this process's
 * environment; a variable set to undefined there is removed.
 */
export const runMesh = (args: string[], env: Record<string, string | undefined> = {}, timeoutMs = 60_000): Promise<CliResult> =>
  runNode([join(projectRoot, 'bin', 'mesh.js'), ...args], `mesh ${args.join(' ')}`, env, timeoutMs);

/** `npm run probe:security` against the stack `env` names (MESH_DEV_DIR and its ports). */
export const runProbe = (env: Record<string, string | undefined>, timeoutMs: number): Promise<CliResult> =>
  runNode(['--import', 'tsx', join(projectRoot, 'scripts', 'probe-security.ts')], 'probe:security', env, timeoutMs);

const runNode = (args: string[], what: string, env: Record<string, string | undefined>, timeoutMs: number): Promise<CliResult> =>
  new Promise((resolvePromise, reject) => {
    const merged: Record<string, string | undefined> = { ...process.env, ...env };
    for (const key of Object.keys(merged)) if (merged[key] === undefined) delete merged[key];
    const child = spawn(process.execPath, args, {
      cwd: projectRoot,
      env: merged,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${what} did not finish in ${timeoutMs} ms\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolvePromise({ code: code ?? -1, stdout, stderr });
    });
  });

/**
 * `mesh …` against one test mesh, with what a refusal test checks: the exit code, no stack trace,
 * and the log's head where it was. `on` is read at call time, so a suite can give it what its
 * beforeAll makes.
 */
export const operatorCli = (on: () => { env: Record<string, string>; logHead: () => Promise<number> }, manifestDir: string) => {
  const mesh = (...args: string[]): Promise<CliResult> => runMesh(args, on().env);
  const manifestFile = (manifest: unknown): string => {
    const file = join(manifestDir, `${uniqueName('manifest-')}.json`);
    writeFileSync(file, JSON.stringify(manifest));
    return file;
  };
  const refused = async (args: string[], code: number): Promise<string> => {
    const before = await on().logHead();
    const result = await mesh(...args);
    expect({ code: result.code, stderr: result.stderr }).toMatchObject({ code });
    expect(result.stderr).not.toMatch(/internal error|\n\s+at /);
    expect(await on().logHead()).toBe(before);
    return result.stderr;
  };
  return { mesh, manifestFile, refused };
};

/**
 * A test mesh an operator's CLI speaks to, opened before the tests and closed after them, with a
 * folder of its own for manifests: `m.t` and `m.env` once the tests run.
 */
export const operatorCliMesh = (prefix: string) => {
  const dir = join(meshHome(), 'tmp', uniqueName(prefix));
  const m = { t: undefined as unknown as TestMesh, env: {} as Record<string, string>, dir };
  const head = async (): Promise<number> => (await m.t.jsm.streams.info(m.t.names.logStream)).state.last_seq;
  beforeAll(async () => {
    mkdirSync(dir, { recursive: true });
    m.t = await openTestMesh();
    m.env = { ...(await m.t.operatorCommands()), MESH_NATS_URL: testNatsUrl() };
  });
  afterAll(async () => {
    await m.t?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { m, head, ...operatorCli(() => ({ env: m.env, logHead: head }), dir) };
};
