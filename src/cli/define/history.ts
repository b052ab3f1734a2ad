import type { CommandUnknownOpts } from '@commander-js/extra-typings';
import { lazy, verb, WIDE_OPTION } from '../verbs.js';

export const defineHistory = (mesh: CommandUnknownOpts): void => {
  verb(mesh, 'history', {
    summary: 'everything that happened to a node, module, seat, operator or assignment, with who and why',
    example: ['mesh history alpha', 'mesh history node.alpha', 'mesh history seat.mesh-git', 'mesh history alpha/greeter'],
    exits: [5, 6, 7],
  })
    .argument('<name>', 'a bare name (alpha), NODE/MODULE for an assignment, or an aggregate (node.alpha, seat.mesh-git)')
    .option(...WIDE_OPTION)
    .action(lazy(async () => (await import('../history.js')).historyCommand));
};
