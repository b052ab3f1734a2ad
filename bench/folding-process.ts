import { spawnSync } from 'node:child_process';
import { FOLDING_NODE_FLAGS } from '../src/projections/runtime.js';

// A benchmark that folds the log runs node as the controller runs it (FOLDING_NODE_FLAGS): when
// this process was started without them, it starts itself again with them and passes on the exit.

export const runAsFolding = async (main: () => Promise<void>): Promise<void> => {
  if (FOLDING_NODE_FLAGS.every((flag) => process.execArgv.includes(flag))) {
    await main();
    return;
  }
  const run = spawnSync(process.execPath, [...FOLDING_NODE_FLAGS, ...process.execArgv, ...process.argv.slice(1)], { stdio: 'inherit' });
  process.exitCode = run.status ?? 1;
};
