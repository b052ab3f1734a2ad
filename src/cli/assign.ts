import { ValidationError } from '../errors.js';
import { printResult, withMesh } from './mesh-session.js';
import { output } from './output.js';
import { assignmentRefFlag } from './seats.js';

// mesh assign MODULE NODE [--hold SEAT]… [--pin REQ=NODE/MODULE]… [--set NAME=VALUE]… [--place DIR=PATH]…
// mesh unassign MODULE NODE

const pairs = (flag: string, entries: readonly string[]): Record<string, string> => {
  const result: Record<string, string> = {};
  for (const entry of entries) {
    const at = entry.indexOf('=');
    if (at <= 0) throw new ValidationError(`${flag} "${entry}" is not NAME=VALUE`, { field: flag });
    result[entry.slice(0, at)] = entry.slice(at + 1);
  }
  return result;
};


export const assignCommand = (module: string, node: string, values: { json?: true; hold: string[]; pin: string[]; set: string[]; place: string[]; commandId?: string; plan?: true }): Promise<number> => {
  const pins = Object.fromEntries(Object.entries(pairs('--pin', values.pin)).map(([name, ref]) => [name, assignmentRefFlag('--pin', ref)]));
  const out = output(values.json ?? false);
  return withMesh(async ({ mesh, metadata }) =>
    printResult(
      out,
      await mesh.execute({ type: 'assign', module, node, hold: values.hold, pins, values: pairs('--set', values.set), placements: pairs('--place', values.place) }, metadata(values.commandId)),
    ),
    { plan: values.plan },
  );
};

export const unassignCommand = (module: string, node: string, values: { json?: true; commandId?: string; plan?: true }): Promise<number> =>
  withMesh(async ({ mesh, metadata }) => printResult(output(values.json ?? false), await mesh.execute({ type: 'unassign', module, node }, metadata(values.commandId))), { plan: values.plan });
