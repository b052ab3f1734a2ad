import type { CommandUnknownOpts } from '@commander-js/extra-typings';
import { group, lazy, verb, PLAN_OPTION, WIDE_OPTION } from '../verbs.js';

export const defineSecret = (mesh: CommandUnknownOpts): void => {
  const secret = group(mesh, 'secret', 'the secrets the mesh names (their values stay in the vault)');
  verb(secret, 'status', { summary: 'every secret the log names: its version, the nodes it goes to, what it is for', example: 'mesh secret status', exits: [6, 7] })
    .option('--at-least <seq>', 'wait until the projections have reached this log sequence')
    .option(...WIDE_OPTION)
    .action(lazy(async () => (await import('../secret.js')).secretStatus));
  verb(secret, 'rotate', {
    summary: 'a new value for a secret, over two credentials: nobody is without a working one; --abandon gives a rotation up',
    example: ['mesh secret rotate postgres-database/beta-gitea', 'mesh secret rotate postgres-database/beta-gitea --abandon'],
    exits: [3, 4, 5, 6],
  })
    .argument('<name>', 'the secret, as mesh secret status names it')
    .option('--abandon', 'give up the rotation under way: the old value stays current, the new one is never used again (once readers were given it, they go back first; abandoning again ends it at once)')
    .option('--reason <text>', 'why it is abandoned (with --abandon)')
    .option('--command-id <id>', 'a retry with the same id acts once')
    .option(...PLAN_OPTION)
    .action(lazy(async () => (await import('../secret.js')).secretRotate));
  verb(secret, 'unseal', {
    summary: "one of the mesh's own secrets, opened from the genesis file with your operator key and printed: the way back when the controller's key is lost",
    example: 'mesh secret unseal mesh/postgres-admin > admin.password',
    exits: [3, 5],
  })
    .argument('<name>', "the secret, as mesh secret status names it (mesh/…)")
    .option('--file <file>', 'the genesis secrets file (default: MESH_GENESIS_SECRETS, else .mesh/dev/genesis-secrets.json)')
    .action(lazy(async () => (await import('../secret.js')).unseal));
};
