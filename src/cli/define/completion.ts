import { Argument, type CommandUnknownOpts } from '@commander-js/extra-typings';
import { bashCompletion, zshCompletion } from '../completion.js';
import { output } from '../output.js';
import { run, verb } from '../verbs.js';

// The completion scripts are written from the definition itself, in this process: nothing to load.

export const defineCompletion = (mesh: CommandUnknownOpts): void => {
  verb(mesh, 'completion', {
    summary: 'print a shell completion script for mesh, written from its verbs and flags',
    example: ['source <(mesh completion bash)', 'mesh completion zsh > "${fpath[1]}/_mesh"'],
    exits: [],
    json: false,
  })
    .addArgument(new Argument('<shell>', 'the shell it is for').choices(['bash', 'zsh'] as const))
    .action(
      run(async (shell: 'bash' | 'zsh') => {
        output(false).line((shell === 'bash' ? bashCompletion : zshCompletion)(mesh).trimEnd());
        return 0;
      }),
    );
};
