import { FOLDING_NODE_FLAGS } from '../projections/runtime.js';
import { backgroundStatus, processFiles, startBackground, stopBackground } from './background.js';

// The local stack's controller: `mesh controller` in the background, its JSON logs in a file.

export interface ControllerProcessOptions {
  dir: string;
  env: Record<string, string>;
  say?: (line: string) => void;
}

const NAME = 'controller';
const marker = (dir: string): string => processFiles(dir, NAME).pidFile;

export const controllerStatus = (dir: string): { running: boolean; pid?: number; logFile: string } => backgroundStatus(dir, NAME, marker(dir));

export const startController = async (options: ControllerProcessOptions): Promise<{ started: boolean; pid?: number }> => {
  const result = await startBackground({ name: NAME, dir: options.dir, args: ['controller', '--pid-file', marker(options.dir)], nodeFlags: FOLDING_NODE_FLAGS, env: options.env, marker: marker(options.dir), writesPidFile: true });
  if (result.started) options.say?.(`controller started (pid ${result.pid}, log ${processFiles(options.dir, NAME).logFile})`);
  return result;
};

export const stopController = (dir: string): Promise<boolean> => stopBackground(dir, NAME, marker(dir));
