import { readFileSync } from 'node:fs';
import { commandLine, isAlive, waitForExit } from '../dev/processes.js';
import type { RunningProcess } from './records.js';

// A process is named by its pid AND its start time (/proc/<pid>/stat field 22). A pid file alone
// outlives its process and pids are reused; a reused pid has a later start time. The command line
// is not part of the name: `sh -c 'exec …'` changes it while the process stays the same one.

const statFields = (pid: number): string[] | undefined => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces; fields after it are plain.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
};

/** Field 22, counted from field 3 after the command name. */
export const startTicks = (pid: number): string | undefined => statFields(pid)?.[19];

const processGroup = (pid: number): number | undefined => {
  const field = statFields(pid)?.[2];
  return field === undefined ? undefined : Number(field);
};

export const describeProcess = (pid: number, startedAt: Date): RunningProcess | undefined => {
  const ticks = startTicks(pid);
  return ticks === undefined ? undefined : { pid, startTicks: ticks, startedAt: startedAt.toISOString(), cmdline: commandLine(pid).trim() };
};

/** Still the very process recorded: alive, not a zombie, same start time. */
export const stillRunning = (running: RunningProcess): boolean => isAlive(running.pid) && startTicks(running.pid) === running.startTicks;

/** Signals the very process recorded (its group, when it leads one); false when it is gone. */
export const signalProcess = (running: RunningProcess, sig: NodeJS.Signals): boolean => {
  if (!stillRunning(running)) return false;
  // The agent starts each process as the leader of its own group, so its children go with it.
  const target = processGroup(running.pid) === running.pid ? -running.pid : running.pid;
  try {
    process.kill(target, sig);
    return true;
  } catch {
    // gone between the check and the signal
    return false;
  }
};

/** SIGTERM, up to `graceMs` to exit, then SIGKILL. */
export const terminate = async (running: RunningProcess, graceMs: number): Promise<void> => {
  signalProcess(running, 'SIGTERM');
  if (await waitForExit(running.pid, graceMs)) return;
  signalProcess(running, 'SIGKILL');
  await waitForExit(running.pid, 5_000);
};
