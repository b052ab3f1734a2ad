import { Option, type CommandUnknownOpts } from '@commander-js/extra-typings';
import { lazy, verb } from '../verbs.js';

export const defineVault = (mesh: CommandUnknownOpts): void => {
  verb(mesh, 'vault', {
    summary: 'make the mesh\'s secrets and hand each, sealed, to the nodes it names, as the holder of mesh-vault; in the foreground, JSON logs on stdout',
    example: 'MESH_BUS_KEY=/srv/mesh/.mesh/vault/bus-identity.json mesh vault --data /srv/mesh/vault/data',
    exits: [2, 6],
    json: false,
  })
    .option('--data <dir>', 'where its secrets are kept, encrypted, 0600 (default: $MESH_HOME/vault)')
    .option('--key-file <file>', 'its at-rest key, when not in --data (MESH_VAULT_KEY_FILE)')
    .option('--controller-key <key-or-file>', 'the controller key it takes make requests from: a public key or a key file (default: the one the log began with)')
    .addOption(new Option('--json', 'its logs are JSON lines whatever is given').hideHelp())
    .action(lazy(async () => (await import('../vault.js')).vaultCommand));
};
