import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../config.js';
import { waitFor } from './ports.js';
import { ourProcess, waitForExit } from './processes.js';

// The local stack's long-running `mesh` processes (the controller, the demo's agents), each in the
// background with its pid and log file in the stack's folder. A process counts as ours only when
// its pid is alive and its command line carries its marker.

export interface BackgroundProcess {
  /** names its pid and log files: `<name>.pid`, `<name>.log` */
  name: string;
  dir: string;
  /** arguments to `mesh` */
  args: string[];
  /** flags for node itself, before the script */
  nodeFlags?: readonly string[];
  env: Record<string, string>;
  /** a string its command line contains, so a reused pid is not mistaken for it */
  marker: string;
  /** it writes its own pid file once ready (the controller's --pid-file); otherwise the starter writes it */
  writesPidFile?: boolean;
}

export const processFiles = (dir: string, name: string) => ({ pidFile: join(dir, `${name}.pid`), logFile: join(dir, `${name}.log`) });

export const backgroundStatus = (dir: string, name: string, marker: string): { running: boolean; pid?: number; logFile: string } => {
  const files = processFiles(dir, name);
  const pid = ourProcess(files.pidFile, marker);
  return { running: pid !== undefined, ...(pid !== undefined ? { pid } : {}), logFile: files.logFile };
};

export const startBackground = async (process_: BackgroundProcess): Promise<{ started: boolean; pid?: number }> => {
  const current = backgroundStatus(process_.dir, process_.name, process_.marker);
  if (current.running) return { started: false, ...(current.pid !== undefined ? { pid: current.pid } : {}) };
  const files = processFiles(process_.dir, process_.name);
  mkdirSync(process_.dir, { recursive: true });
  const logFd = openSync(files.logFile, 'a');
  const child = spawn(process.execPath, [...(process_.nodeFlags ?? []), join(projectRoot, 'bin', 'mesh.js'), ...process_.args], {
    detached: true,
    stdio: ['ignore', logFd, logFd],
    env: { ...process.env, ...process_.env },
  });
  closeSync(logFd);
  child.unref();
  if (!process_.writesPidFile && child.pid !== undefined) writeFileSync(files.pidFile, `${child.pid}\n`);
  await waitFor(`${process_.name} to start`, async () => backgroundStatus(process_.dir, process_.name, process_.marker).running || child.exitCode !== null, 30_000);
  if (!backgroundStatus(process_.dir, process_.name, process_.marker).running) {
    const tail = existsSync(files.logFile) ? readFileSync(files.logFile, 'utf8').trimEnd().split('\n').slice(-10).join('\n') : '';
    throw new Error(`${process_.name} exited while starting; its log (${files.logFile}):\n${tail}`);
  }
  return { started: true, ...(child.pid !== undefined ? { pid: child.pid } : {}) };
};

export const stopBackground = async (dir: string, name: string, marker: string): Promise<boolean> => {
  const status = backgroundStatus(dir, name, marker);
  if (!status.running || status.pid === undefined) return false;
  process.kill(status.pid, 'SIGTERM');
  if (!(await waitForExit(status.pid, 15_000))) process.kill(status.pid, 'SIGKILL');
  rmSync(processFiles(dir, name).pidFile, { force: true });
  return true;
};
