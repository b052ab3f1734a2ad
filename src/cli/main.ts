import { ValidationError } from '../errors.js';
import { devCommand } from './dev.js';
import { logCommand } from './log.js';
import { reportError } from './output.js';

const USAGE = `mesh — the mesh control plane

usage:
  mesh dev up|down|status [--json]     start, stop or describe the local stack (NATS + PostgreSQL)
  mesh log [--since SEQ] [--aggregate A] [--type T] [--follow] [--json]
                                       print the mesh log: every mesh change, in order

Addresses come from MESH_NATS_URL and MESH_DATABASE_URL, else from the local stack.`;

export const main = async (argv: string[]): Promise<number> => {
  const [verb, ...rest] = argv;
  const json = rest.includes('--json');
  try {
    switch (verb) {
      case 'dev':
        return await devCommand(rest);
      case 'log':
        return await logCommand(rest);
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        process.stdout.write(`${USAGE}\n`);
        return verb === undefined ? 2 : 0;
      default:
        throw new ValidationError(`unknown verb "${verb}"; the verbs are: dev, log (see \`mesh help\`)`, { field: 'verb' });
    }
  } catch (error) {
    return reportError(error, json);
  }
};
