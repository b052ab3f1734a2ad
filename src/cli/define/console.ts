import type { CommandUnknownOpts } from '@commander-js/extra-typings';
import { group, lazy, verb } from '../verbs.js';

export const defineConsole = (mesh: CommandUnknownOpts): void => {
  const consoleVerbs = group(mesh, 'console', "the mesh's console: pages and API served by the controller");
  verb(consoleVerbs, 'open', {
    summary: 'sign in to the console with your operator key; prints the address to open in a browser (good once, for a minute)',
    example: ['mesh console open', 'mesh console open --url https://mesh.example.org:18080 --json'],
    exits: [3, 6],
  })
    .option('--url <url>', "the controller's console (default: MESH_CONSOLE_URL, else MESH_HTTP_HOST and MESH_HTTP_PORT)")
    .action(lazy(async () => (await import('../console.js')).consoleOpen));
};
