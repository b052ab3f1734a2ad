import type { CommandUnknownOpts } from '@commander-js/extra-typings';
import { collect, lazy, verb, PLAN_OPTION, WIDE_OPTION } from '../verbs.js';

export const defineLog = (mesh: CommandUnknownOpts): void => {
  const log = verb(mesh, 'log', {
    summary: 'print the mesh log: every mesh change, in order, with who caused it',
    example: ['mesh log --since 120', 'mesh log --aggregate seat.mesh-git', 'mesh log --type node.added --type assignment.created --follow', 'mesh log --actor operator:ada --after 2026-12-02T14:00:00Z'],
    exits: [6, 7],
  })
    .option('--since <seq>', 'from this log sequence on')
    .option('--aggregate <aggregate>', 'one aggregate (seat.mesh-git) or every one of a kind (seat)')
    .option('--type <type>', 'events of this type (repeatable)', collect, [])
    .option('--actor <actor>', 'caused by this actor; a trailing * matches a prefix')
    .option('--correlation <id>', 'one conversation: a command and what it caused')
    .option('--after <time>', 'recorded at or after this time (ISO 8601)')
    .option('--before <time>', 'recorded at or before this time (ISO 8601)')
    .option('--follow', 'then tail the log as it grows, until interrupted')
    .option(...WIDE_OPTION)
    .action(lazy(async () => (await import('../log.js')).logCommand));
  verb(log, 'void', {
    summary: 'let every reader pass a commit that does not read or verify (an operator\'s signed command)',
    example: 'mesh log void 4182 --reason "written by a controller with a lost key; replayed by hand at 4190"',
    exits: [3, 4, 6],
  })
    .argument('<seq>', 'the log sequence readers are held at (`mesh status` names it)')
    .requiredOption('--reason <text>', 'why the commit is passed by')
    .option('--command-id <id>', 'a retry with the same id acts once')
    .option(...PLAN_OPTION)
    .action(lazy(async () => (await import('../log-void.js')).voidCommand));
};
