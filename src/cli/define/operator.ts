import type { CommandUnknownOpts } from '@commander-js/extra-typings';
import { COMMAND_WINDOW_BOUNDS } from '../../domain/operators/command-window-bounds.js';
import { group, lazy, verb, PLAN_OPTION, WIDE_OPTION } from '../verbs.js';

export const defineOperator = (mesh: CommandUnknownOpts): void => {
  const operator = group(mesh, 'operator', 'operators and the keys their commands are signed with');
  verb(operator, 'key', { summary: 'make your signing key; prints its public half for an operator to add', example: 'mesh operator key grace', exits: [] })
    .argument('<name>', 'your operator name')
    .option('--out <file>', 'where the key file is written (default: the local stack\'s operators folder)')
    .action(lazy(async () => (await import('../operator.js')).operatorKey));
  verb(operator, 'add', { summary: 'let an operator sign commands with a public key', example: 'mesh operator add grace --key Pp3f…=', exits: [3, 4, 6] })
    .argument('<name>', 'the operator')
    .requiredOption('--key <public-key>', 'the public key `mesh operator key` printed')
    .option('--command-id <id>', 'a retry with the same id acts once')
    .option(...PLAN_OPTION)
    .action(lazy(async () => (await import('../operator.js')).operatorAdd));
  verb(operator, 'revoke', { summary: 'refuse an operator\'s commands from now on', example: 'mesh operator revoke grace', exits: [3, 4, 5, 6] })
    .argument('<name>', 'the operator')
    .option('--command-id <id>', 'a retry with the same id acts once')
    .option(...PLAN_OPTION)
    .action(lazy(async () => (await import('../operator.js')).operatorRevoke));
  verb(operator, 'window', {
    summary: 'how long a signed command stays good: the controller refuses one signed further from its clock, either way (5m until set)',
    example: ['mesh operator window 10m', 'mesh operator window 90s --plan'],
    exits: [3, 4, 6],
  })
    .argument('<duration>', `from ${COMMAND_WINDOW_BOUNDS.written}, e.g. 30s, 5m, 1h`)
    .option('--command-id <id>', 'a retry with the same id acts once')
    .option(...PLAN_OPTION)
    .action(lazy(async () => (await import('../operator.js')).operatorWindow));
  verb(operator, 'list', { summary: 'every operator, active or revoked, and its public key', example: 'mesh operator list', exits: [6, 7] })
    .option('--at-least <seq>', 'wait until the projections have reached this log sequence')
    .option(...WIDE_OPTION)
    .action(lazy(async () => (await import('../operator.js')).operatorList));
};
