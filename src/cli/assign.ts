import { ValidationError } from '../errors.js';
import type { CommandUnknownOpts } from '@commander-js/extra-typings';
import { printResult, withMesh, PLAN_OPTION } from './mesh-session.js';
import { output } from './output.js';
import { assignmentRefFlag } from './seats.js';
import { collect, run, verb } from './verbs.js';

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

export const defineAssign = (mesh: CommandUnknownOpts): void => {
  verb(mesh, 'assign', {
    summary: 'put a module on a node, resolving every requirement or naming every one it cannot',
    example: ['mesh assign nats novox --hold mesh-broker', 'mesh assign gitea novox --hold mesh-git --set public-name=git.novox --pin db=novox/postgres', 'mesh assign gitea novox --plan'],
    exits: [3, 4, 5, 6],
  })
    .argument('<module>', 'a registered module')
    .argument('<node>', 'a node of the mesh')
    .option('--hold <seat>', 'a seat it takes (repeatable)', collect, [])
    .option('--pin <req=node/module>', 'answer a requirement with this assignment (repeatable)', collect, [])
    .option('--set <name=value>', 'a value it requires (repeatable)', collect, [])
    .option('--place <dir=path>', 'where a directory it requires is placed on the node (repeatable)', collect, [])
    .option('--command-id <id>', 'a retry with the same id acts once')
    .option(...PLAN_OPTION)
    .action(run(assignCommand));
  verb(mesh, 'unassign', { summary: 'take a module off a node, releasing the seats it held', example: ['mesh unassign vault novox', 'mesh unassign vault novox --plan'], exits: [3, 4, 5, 6] })
    .argument('<module>', 'the module')
    .argument('<node>', 'the node it runs on')
    .option('--command-id <id>', 'a retry with the same id acts once')
    .option(...PLAN_OPTION)
    .action(run(unassignCommand));
};

const assignCommand = (module: string, node: string, values: { json?: true; hold: string[]; pin: string[]; set: string[]; place: string[]; commandId?: string; plan?: true }): Promise<number> => {
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

const unassignCommand = (module: string, node: string, values: { json?: true; commandId?: string; plan?: true }): Promise<number> =>
  withMesh(async ({ mesh, metadata }) => printResult(output(values.json ?? false), await mesh.execute({ type: 'unassign', module, node }, metadata(values.commandId))), { plan: values.plan });
