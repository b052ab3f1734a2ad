import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { projectRoot } from '../../src/config.js';

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
  new Promise((resolvePromise, reject) => {
    const merged: Record<string, string | undefined> = { ...process.env, ...env };
    for (const key of Object.keys(merged)) if (merged[key] === undefined) delete merged[key];
    const child = spawn(process.execPath, [join(projectRoot, 'bin', 'mesh.js'), ...args], {
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
      reject(new Error(`mesh ${args.join(' ')} did not finish in ${timeoutMs} ms\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolvePromise({ code: code ?? -1, stdout, stderr });
    });
  });
