import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../config.js';
import { waitFor } from './ports.js';
import { ourProcess, waitForExit } from './processes.js';

// The local stack's controller: `mesh controller` in the background, its JSON logs in a file.

export interface ControllerProcessOptions {
  dir: string;
  env: Record<string, string>;
  say?: (line: string) => void;
}

const paths = (dir: string) => ({ pidFile: join(dir, 'controller.pid'), logFile: join(dir, 'controller.log') });

export const controllerStatus = (dir: string): { running: boolean; pid?: number; logFile: string } => {
  const p = paths(dir);
  const pid = ourProcess(p.pidFile, p.pidFile);
  return { running: pid !== undefined, ...(pid !== undefined ? { pid } : {}), logFile: p.logFile };
};

export const startController = async (options: ControllerProcessOptions): Promise<{ started: boolean; pid?: number }> => {
  const current = controllerStatus(options.dir);
  if (current.running) return { started: false, ...(current.pid !== undefined ? { pid: current.pid } : {}) };
  const p = paths(options.dir);
  mkdirSync(options.dir, { recursive: true });
  const logFd = openSync(p.logFile, 'a');
  const child = spawn(process.execPath, [join(projectRoot, 'bin', 'mesh.js'), 'controller', '--pid-file', p.pidFile], {
    detached: true,
    stdio: ['ignore', logFd, logFd],
    env: { ...process.env, ...options.env },
  });
  closeSync(logFd);
  child.unref();
  await waitFor('the controller to start', async () => controllerStatus(options.dir).running || child.exitCode !== null, 30_000);
  if (!controllerStatus(options.dir).running) throw new Error(`the controller exited while starting; its log: ${p.logFile}`);
  options.say?.(`controller started (pid ${child.pid}, log ${p.logFile})`);
  return { started: true, ...(child.pid !== undefined ? { pid: child.pid } : {}) };
};

export const stopController = async (dir: string): Promise<boolean> => {
  const status = controllerStatus(dir);
  if (!status.running || status.pid === undefined) return false;
  process.kill(status.pid, 'SIGTERM');
  if (!(await waitForExit(status.pid, 10_000))) process.kill(status.pid, 'SIGKILL');
  return true;
};
