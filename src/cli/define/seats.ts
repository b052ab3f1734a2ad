import type { CommandUnknownOpts } from '@commander-js/extra-typings';
import { group, lazy, verb, AT_OPTION, PLAN_OPTION, WIDE_OPTION } from '../verbs.js';

export const defineSeats = (mesh: CommandUnknownOpts): void => {
  verb(mesh, 'seats', { summary: 'every seat: its scope, what it delivers, who declared it, its holder', example: ['mesh seats', 'mesh seats --json', 'mesh seats --at 1200'], exits: [6, 7] })
    .option('--at-least <seq>', 'wait until the projections have reached this log sequence')
    .option(...AT_OPTION)
    .option(...WIDE_OPTION)
    .action(lazy(async () => (await import('../seats.js')).seatsCommand));
  const seat = group(mesh, 'seat', 'one seat: hand it over, rename it');
  verb(seat, 'handover', {
    summary: 'move a seat to another holder in one event; refused if it moved since you looked',
    example: ['mesh seat handover mesh-git --to lab1/forge', 'mesh seat handover mesh-git --to lab1/forge --from novox/gitea', 'mesh seat handover mesh-git --to lab1/forge --plan'],
    exits: [3, 4, 5, 6],
  })
    .argument('<seat>', 'the seat, by any of its names')
    .requiredOption('--to <node/module>', 'the assignment that takes it')
    .option('--from <node/module|none>', 'the holder you hand it over from (default: its holder now)')
    .option('--command-id <id>', 'a retry with the same id acts once')
    .option(...PLAN_OPTION)
    .action(lazy(async () => (await import('../seats.js')).seatHandover));
  verb(seat, 'rename', { summary: 'rename a seat; the old name keeps resolving', example: 'mesh seat rename mesh-git mesh-forge', exits: [3, 4, 5, 6] })
    .argument('<seat>', 'the seat, by any of its names')
    .argument('<new-name>', 'the name it goes by from now on')
    .option('--command-id <id>', 'a retry with the same id acts once')
    .option(...PLAN_OPTION)
    .action(lazy(async () => (await import('../seats.js')).seatRename));
};
