import type { CommandUnknownOpts } from '@commander-js/extra-typings';
import { lazy, verb, AT_OPTION, WIDE_OPTION } from '../verbs.js';

export const defineStatus = (mesh: CommandUnknownOpts): void => {
  verb(mesh, 'status', {
    summary: 'the overview: projections, nodes and what they run, machines, unheld seats, refusals, what is not known',
    example: ['mesh status', 'mesh status --json', 'mesh status --wait 60s', 'mesh status --at 1200', 'mesh status --at 2026-12-04T09:00:00Z'],
    exits: [1, 6],
  })
    .option('--at-least <seq>', 'wait until the projections have reached this log sequence')
    .option(...AT_OPTION)
    .option('--wait <duration>', 'ask again until the mesh does what it was told, up to this long (e.g. 60s); then print the overview')
    .option(...WIDE_OPTION)
    .action(lazy(async () => (await import('../status.js')).statusCommand));
};
