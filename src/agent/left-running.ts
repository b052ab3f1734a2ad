import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { stillRunning } from './proc.js';
import type { ResourceRecord } from './records.js';

// An agent's stop leaves what it runs running, by design (a restart restarts nothing). Whoever
// means to end those too — `mesh dev down`, a test's cleanup — signals the process groups its
// records name, and only those that are still the very processes it started.

export const stopRecordedProcesses = (stateDir: string, signal: NodeJS.Signals): number => {
  const file = join(stateDir, 'records.json');
  if (!existsSync(file)) return 0;
  let signalled = 0;
  for (const record of JSON.parse(readFileSync(file, 'utf8')) as ResourceRecord[]) {
    if (record.kind !== 'process' || !record.running || !stillRunning(record.running)) continue;
    try {
      process.kill(-record.running.pid, signal);
      signalled++;
    } catch {
      // gone between the check and the signal
    }
  }
  return signalled;
};
