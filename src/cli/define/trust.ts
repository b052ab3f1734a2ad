import type { CommandUnknownOpts } from '@commander-js/extra-typings';
import { group, lazy, verb, PLAN_OPTION } from '../verbs.js';

export const defineTrust = (mesh: CommandUnknownOpts): void => {
  const trust = group(mesh, 'trust', 'the root certificate the mesh\'s machines trust');
  verb(trust, 'root', { summary: 'set (or rotate) the mesh\'s root certificate, which every machine with a trust anchor is sent', example: 'mesh trust root ca/root.crt', exits: [2, 3, 4, 6] })
    .argument('<certificate>', 'a PEM file holding one CA certificate')
    .option('--command-id <id>', 'a retry with the same id acts once')
    .option(...PLAN_OPTION)
    .action(lazy(async () => (await import('../trust.js')).trustRoot));
};
