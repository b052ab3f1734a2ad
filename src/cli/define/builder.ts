import { Option, type CommandUnknownOpts } from '@commander-js/extra-typings';
import { lazy, verb } from '../verbs.js';

export const defineBuilder = (mesh: CommandUnknownOpts): void => {
  verb(mesh, 'builder', {
    summary: 'take build jobs as a holder of mesh-build-machine, in the foreground; JSON logs on stdout',
    example: 'MESH_BUS_KEY=/var/lib/mesh/.mesh/builder/bus.key mesh builder --work /var/tmp/builds',
    exits: [6],
    json: false,
  })
    .option('--work <dir>', 'where builds are checked out and run')
    .option('--heartbeat-ms <ms>', 'how often it tells the server a build is still going, from 100 to 30000 (default 5000)')
    .option('--name <name>', 'the name it reports as')
    .addOption(new Option('--json', 'its logs are JSON lines whatever is given').hideHelp())
    .action(lazy(async () => (await import('../builder.js')).builderCommand));
};
