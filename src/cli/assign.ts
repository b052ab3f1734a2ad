import { ValidationError } from '../errors.js';
import { parseFlags } from './flags.js';
import { printResult, withMesh } from './mesh-session.js';
import { output } from './output.js';
import { assignmentRefFlag } from './seats.js';

// mesh assign MODULE NODE [--hold SEAT]… [--pin REQ=NODE/MODULE]… [--set NAME=VALUE]… [--place DIR=PATH]…
// mesh unassign MODULE NODE

const pairs = (flag: string, entries: string[] | undefined): Record<string, string> => {
  const result: Record<string, string> = {};
  for (const entry of entries ?? []) {
    const at = entry.indexOf('=');
    if (at <= 0) throw new ValidationError(`${flag} "${entry}" is not NAME=VALUE`, { field: flag });
    result[entry.slice(0, at)] = entry.slice(at + 1);
  }
  return result;
};

export const assignCommand = async (args: string[]): Promise<number> => {
  const { values, positionals } = parseFlags(
    args,
    {
      json: { type: 'boolean', default: false },
      hold: { type: 'string', multiple: true },
      pin: { type: 'string', multiple: true },
      set: { type: 'string', multiple: true },
      place: { type: 'string', multiple: true },
      'command-id': { type: 'string' },
    },
    2,
  );
  const [module, node] = positionals;
  if (!module || !node) throw new ValidationError('usage: mesh assign MODULE NODE [--hold SEAT] [--pin REQ=NODE/MODULE] [--set NAME=VALUE] [--place DIR=PATH]', { field: module ? 'node' : 'module' });
  const pins = Object.fromEntries(Object.entries(pairs('--pin', values.pin)).map(([name, ref]) => [name, assignmentRefFlag('--pin', ref)]));
  const out = output(values.json ?? false);
  return withMesh(async ({ mesh, metadata }) =>
    printResult(
      out,
      await mesh.execute(
        { type: 'assign', module, node, hold: values.hold ?? [], pins, values: pairs('--set', values.set), placements: pairs('--place', values.place) },
        metadata(values['command-id']),
      ),
    ),
  );
};

export const unassignCommand = async (args: string[]): Promise<number> => {
  const { values, positionals } = parseFlags(args, { json: { type: 'boolean', default: false }, 'command-id': { type: 'string' } }, 2);
  const [module, node] = positionals;
  if (!module || !node) throw new ValidationError('usage: mesh unassign MODULE NODE', { field: module ? 'node' : 'module' });
  const out = output(values.json ?? false);
  return withMesh(async ({ mesh, metadata }) => printResult(out, await mesh.execute({ type: 'unassign', module, node }, metadata(values['command-id']))));
};
