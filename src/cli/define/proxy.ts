import { Option, type CommandUnknownOpts } from '@commander-js/extra-typings';
import { group, lazy, verb } from '../verbs.js';

export const defineProxy = (mesh: CommandUnknownOpts): void => {
  const proxy = group(mesh, 'proxy', 'the program of the mesh\'s proxy module: hands back public names and serves HTTP from the routes file');
  verb(proxy, 'serve', {
    summary: 'as the holder of mesh-proxy: hand back each public name the routes file asks for, and serve HTTP on --host:--port by its entries (forward, refuse, redirect, authenticate); in the foreground, JSON logs on stdout',
    example: 'MESH_BUS_KEY=/srv/.mesh/local-proxy/bus-identity.json mesh proxy serve --host 10.0.0.5 --port 80',
    exits: [6],
    json: false,
  })
    .requiredOption('--port <port>', 'the port it serves HTTP on (the module\'s http-port)')
    .option('--host <address>', 'the address it listens on', '0.0.0.0')
    .option('--routes <file>', 'the routes file (default: the one the mesh writes beside MESH_BUS_KEY, routes/routes.json)')
    .addOption(new Option('--json', 'its logs are JSON lines whatever is given').hideHelp())
    .action(lazy(async () => (await import('../proxy.js')).proxyServe));
};
