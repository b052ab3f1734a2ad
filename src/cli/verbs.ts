import type { Command, CommandUnknownOpts } from '@commander-js/extra-typings';

// How a verb of the CLI is declared: its summary, an example and the exit codes it can answer
// with, all printed by its --help. The definition (program.ts) is the one list of verbs: the
// help, the completion scripts and the test of every verb's help are read from it.

/** What each exit code means, the same for every verb (docs/decisions.md, "The CLI on commander"). */
export const EXIT_CODES = {
  0: 'done',
  1: 'answered, and what was asked about is not healthy (or an internal error)',
  2: 'bad input: a verb, flag, argument or value it does not take',
  3: 'refused: the mesh will not do it, and says why',
  4: 'conflict: the mesh moved while it was decided; run it again',
  5: 'not found: a node, module, seat, operator, assignment or projection it names does not exist',
  6: 'unavailable: NATS, PostgreSQL or the controller did not answer, or the projections are behind',
  7: 'unreadable: a commit in the log does not read or verify',
} as const;

export type ExitCode = keyof typeof EXIT_CODES;

export interface VerbHelp {
  summary: string;
  /** one or more command lines an operator could type */
  example: string | readonly string[];
  /** besides 0 and 2, which every verb can answer */
  exits: readonly ExitCode[];
  /** a long-running verb, a listing or a change: --json is offered unless false */
  json?: boolean;
}

export const helpFooter = (help: Pick<VerbHelp, 'example' | 'exits'>): string => {
  const examples = typeof help.example === 'string' ? [help.example] : help.example;
  const codes = [...new Set<ExitCode>([0, 2, ...help.exits])].sort((a, b) => a - b);
  return ['', examples.length > 1 ? 'Examples:' : 'Example:', ...examples.map((e) => `  ${e}`), '', 'Exit codes:', ...codes.map((code) => `  ${code}  ${EXIT_CODES[code]}`)].join('\n');
};

/** What each verb's help says, for the group above it to gather. */
const helps = new WeakMap<CommandUnknownOpts, VerbHelp>();

/** A verb under `parent`, with its summary, example and exit codes in its help, and --json. */
export const verb = (parent: CommandUnknownOpts, name: string, help: VerbHelp) => {
  const command = parent.command(name).description(help.summary).addHelpText('after', helpFooter(help));
  helps.set(command, help);
  return help.json === false ? command : command.option('--json', 'one JSON document per line on stdout');
};

/**
 * A verb made of sub-verbs: `mesh node` alone prints its help to stderr and exits 2. Its help
 * gathers its sub-verbs' examples and exit codes.
 */
export const group = (parent: CommandUnknownOpts, name: string, summary: string): Command => {
  const command = parent.command(name).description(summary);
  return command.addHelpText('after', () => {
    const subs = command.commands.flatMap((sub) => helps.get(sub) ?? []);
    const examples = subs.map((h) => (typeof h.example === 'string' ? h.example : (h.example[0] ?? '')));
    return `${helpFooter({ example: examples, exits: subs.flatMap((h) => h.exits) })}\n\n\`mesh ${name} VERB --help\` says more of each.`;
  });
};

/** What the verb that ran answered, per program: commander keeps no action's result. */
const answered = new WeakMap<CommandUnknownOpts, number>();

const rootOf = (command: CommandUnknownOpts): CommandUnknownOpts => (command.parent ? rootOf(command.parent) : command);

/** An action whose answer is the exit code `exitCodeOf(program)` returns. */
export const run = <A extends unknown[]>(handler: (...args: A) => Promise<number>) =>
  async function (this: CommandUnknownOpts, ...args: A): Promise<void> {
    answered.set(rootOf(this), await handler(...args));
  };

/**
 * The action of a verb whose implementation is loaded only when the verb runs, so that `mesh
 * --help` and every other verb load none of it: `.action(lazy(async () => (await
 * import('../status.js')).statusCommand))`. The bundle gives each such import a file of its own
 * (scripts/build-cli.js); a verb's definition in src/cli/define/ imports nothing else that loads
 * code (docs/architecture.md, "The CLI").
 */
export const lazy = <A extends unknown[]>(load: () => Promise<(...args: A) => Promise<number>>) =>
  run(async (...args: A): Promise<number> => (await load())(...args));

export const exitCodeOf = (program: CommandUnknownOpts): number => answered.get(program) ?? 0;

/** Every verb and sub-verb of `program`, as the words an operator types after `mesh`. */
export const verbsOf = (command: CommandUnknownOpts, path: readonly string[] = []): string[][] =>
  command.commands.filter((sub) => sub.name() !== 'help').flatMap((sub) => [[...path, sub.name()], ...verbsOf(sub, [...path, sub.name()])]);

/** `--pin A --pin B`: every value, in order. */
export const collect = (value: string, previous: string[]): string[] => [...previous, value];

/** `--plan` on a verb that issues a command: `.option(...PLAN_OPTION)`. */
export const PLAN_OPTION = ['--plan', 'say what it would do to each node\'s declaration, and append nothing (exit 0: it would be carried out; 3: refused)'] as const;

/** `--at` on a read that can answer as the mesh was: `.option(...AT_OPTION)`. */
export const AT_OPTION = ['--at <seq|time>', 'answer as the mesh was at this log sequence, or at the last commit at or before this ISO time (folded from the log)'] as const;

/** `--at-least` on a read of the projections: `.option(...AT_LEAST_OPTION)`. */
export const AT_LEAST_OPTION = ['--at-least <seq>', 'wait until the projections have reached this log sequence'] as const;

/** `-o wide` on a verb whose table has more to say than fits 100 columns: `.option(...WIDE_OPTION)`. */
export const WIDE_OPTION = ['-o, --output <format>', 'wide: every column in full, however wide (by default a table fits 100 columns)'] as const;
