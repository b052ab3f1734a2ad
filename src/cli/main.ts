import { CommanderError } from '@commander-js/extra-typings';
import { FOLDING_NODE_FLAGS } from '../projections/runtime.js';
import { reportError } from './output.js';
import { meshProgram, parseRefusal } from './program.js';
import { exitCodeOf } from './verbs.js';
import { asksVersion, printVersion } from './version.js';

/** `mesh log | head`: once the reader has gone, there is no one left to print for. */
const endQuietlyWhenTheReaderGoes = (): void => {
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    process.exit(0);
  });
};

/** The node flags a verb wants its process run with: those that fold the log into projections. */
export const nodeFlagsFor = (argv: readonly string[]): readonly string[] =>
  argv[0] === 'controller' || (argv[0] === 'projections' && argv[1] === 'rebuild') ? FOLDING_NODE_FLAGS : [];

export const main = async (argv: string[]): Promise<number> => {
  endQuietlyWhenTheReaderGoes();
  const json = argv.includes('--json');
  if (asksVersion(argv)) {
    try {
      return printVersion(argv);
    } catch (error) {
      return reportError(error, json);
    }
  }
  const program = meshProgram();
  if (argv.length === 0) {
    program.outputHelp();
    return 0;
  }
  try {
    await program.parseAsync(argv, { from: 'user' });
    return exitCodeOf(program);
  } catch (error) {
    if (!(error instanceof CommanderError)) return reportError(error, json);
    const refusal = parseRefusal(program, argv, error);
    return refusal === 0 ? 0 : reportError(refusal, json);
  }
};
