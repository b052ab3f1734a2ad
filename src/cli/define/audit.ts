import type { CommandUnknownOpts } from '@commander-js/extra-typings';
import { group, lazy, verb } from '../verbs.js';

export const defineAudit = (mesh: CommandUnknownOpts): void => {
  const audit = group(mesh, 'audit', 'the log, proved');
  verb(audit, 'verify', {
    summary: 're-check from seq 1 every link and writer signature, envelope, operator signature and who added each operator',
    example: ['mesh audit verify', 'mesh audit verify --controller-key .mesh/dev/controller.key'],
    exits: [1, 6],
  })
    .option('--controller-key <key-or-file>', 'the controller key the genesis must name: a public key, or a key file (default: this machine\'s)')
    .action(lazy(async () => (await import('../audit.js')).verifyCommand));
};
