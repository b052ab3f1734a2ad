import { Option, type CommandUnknownOpts } from '@commander-js/extra-typings';
import { lazy, verb } from '../verbs.js';

export const defineAgent = (mesh: CommandUnknownOpts): void => {
  verb(mesh, 'agent', {
    summary: 'run this machine\'s node agent in the foreground; stopping it leaves what runs running',
    example: ['mesh agent --node lab1 --token-file ./lab1.token', 'MESH_ENROL_TOKEN=… mesh agent --node lab1', 'mesh agent --node lab1   (once enrolled)'],
    exits: [3, 6],
  })
    .requiredOption('--node <name>', 'the node this machine is')
    .option('--state <dir>', 'where its keys and what it applied are kept (default: under the mesh home)')
    .option('--token-file <file>', 'an enrolment token from `mesh node token`, read once and removed when spent')
    .option('--controller-key <key-or-file>', "the controller's public key (base64) or key file: only declarations it signed are applied (default: the key the enrolment answer named; needed for a node enrolled before declarations were signed)")
    .addOption(new Option('--token <token>', 'refused: a token on the command line is visible to every user (ps)').hideHelp())
    .action(lazy(async () => (await import('../agent.js')).agentVerb));
};
