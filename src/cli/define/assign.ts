import type { CommandUnknownOpts } from '@commander-js/extra-typings';
import { collect, lazy, verb, PLAN_OPTION } from '../verbs.js';

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
    .action(lazy(async () => (await import('../assign.js')).assignCommand));
  verb(mesh, 'unassign', { summary: 'take a module off a node, releasing the seats it held', example: ['mesh unassign vault novox', 'mesh unassign vault novox --plan'], exits: [3, 4, 5, 6] })
    .argument('<module>', 'the module')
    .argument('<node>', 'the node it runs on')
    .option('--command-id <id>', 'a retry with the same id acts once')
    .option(...PLAN_OPTION)
    .action(lazy(async () => (await import('../assign.js')).unassignCommand));
};
