import { Option, type CommandUnknownOpts } from '@commander-js/extra-typings';
import { lazy, verb } from '../verbs.js';

export const defineController = (mesh: CommandUnknownOpts): void => {
  verb(mesh, 'controller', {
    summary: 'run the control plane in the foreground; JSON logs on stdout (mesh dev up runs it for you)',
    example: 'mesh controller --pid-file /run/mesh-controller.pid',
    exits: [1, 6],
    json: false,
  })
    .option('--pid-file <file>', 'written once it runs, removed when it stops')
    .addOption(new Option('--json', 'its logs are JSON lines whatever is given').hideHelp())
    .action(lazy(async () => (await import('../controller.js')).controllerCommand));
};
