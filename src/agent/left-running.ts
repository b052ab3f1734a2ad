import { signalProcess } from './proc.js';
import { StateFolder } from './state-folder.js';

// An agent's stop leaves what it runs running, by design (a restart restarts nothing). Whoever
// means to end those too — `mesh dev down`, a test's cleanup — signals the process groups its
// records name, and only those that are still the very processes it started.

export const stopRecordedProcesses = (stateDir: string, signal: NodeJS.Signals): number =>
  new StateFolder(stateDir).loadRecords().filter((record) => record.kind === 'process' && record.running !== null && signalProcess(record.running, signal)).length;
