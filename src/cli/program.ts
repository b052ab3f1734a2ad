import { Command, type CommanderError, type CommandUnknownOpts } from '@commander-js/extra-typings';
import { ValidationError } from '../errors.js';
import { defineAgent } from './define/agent.js';
import { defineAssign } from './define/assign.js';
import { defineAudit } from './define/audit.js';
import { defineBuilds } from './define/build.js';
import { defineBuilder } from './define/builder.js';
import { defineCompletion } from './define/completion.js';
import { defineConsole } from './define/console.js';
import { defineController } from './define/controller.js';
import { defineDev } from './define/dev.js';
import { defineEvents } from './define/events.js';
import { defineHistory } from './define/history.js';
import { defineLog } from './define/log.js';
import { defineModule } from './define/module.js';
import { defineNode } from './define/node.js';
import { defineOperator } from './define/operator.js';
import { TABLE_WIDTH } from './output.js';
import { defineProjections } from './define/projections.js';
import { defineSeats } from './define/seats.js';
import { defineTrust } from './define/trust.js';
import { defineStatus } from './define/status.js';
import { defineSecret } from './define/secret.js';
import { defineVault } from './define/vault.js';
import { definePostgres } from './define/postgres.js';
import { defineProxy } from './define/proxy.js';
import { helpFooter, verbsOf } from './verbs.js';
import { VERSION_FLAGS } from './version.js';

// The CLI's definition: every verb, its flags, its help. One program per run (commander keeps
// what it parsed on it).

const ENVIRONMENT = `Every verb takes --json (one JSON document per line on stdout); commands take --command-id ID
(a retry with the same id acts once) and --plan (say what each node's declaration would become,
append nothing). Reads wait until the projections have reached the log's head, or --at-least SEQ
(a command's reply says its seq), for MESH_READ_TIMEOUT_MS (10000); status, node show, seats,
module show and graph take --at SEQ|TIME to answer as the mesh was then, folded from the log.

Addresses come from MESH_NATS_URL and MESH_DATABASE_URL, else from the local stack. Commands are
signed with MESH_OPERATOR_KEY (by default .mesh/dev/operator.key). Reads log in to PostgreSQL as
mesh_reader with the password in MESH_PG_PASSWORD_FILE_READER (by default the local stack's secrets
folder, written by \`mesh dev up\`).

\`mesh VERB --help\` says more of each verb: its flags, an example and its exit codes.`;

/** Every verb an operator can run, one a line, as `mesh --help` lists them. */
const verbList = (program: CommandUnknownOpts): string => {
  const runnable = verbsOf(program)
    .map((path) => ({ path, command: commandAt(program, path) }))
    .filter(({ command }) => command !== undefined && (command.commands.length === 0 || runsItself(command)));
  const lines = runnable.map(({ path, command }) => ({
    usage: [
      ...path,
      ...(command?.registeredArguments ?? []).map((a) => (a.required ? `<${a.name()}>` : `[${a.name()}]`) + (a.variadic ? '…' : '')),
      ...(command?.options ?? []).filter((o) => o.mandatory).map((o) => o.flags),
    ].join(' '),
    summary: command?.description() ?? '',
  }));
  const width = Math.min(34, Math.max(...lines.map((l) => l.usage.length)));
  const wrapAt = TABLE_WIDTH - width - 4;
  return lines
    .map(({ usage, summary }) => {
      const words = summary.split(' ');
      const wrapped: string[] = [''];
      for (const word of words) {
        const last = wrapped.length - 1;
        if ((wrapped[last] as string).length + word.length + 1 > wrapAt && wrapped[last] !== '') wrapped.push(word);
        else wrapped[last] = wrapped[last] === '' ? word : `${wrapped[last]} ${word}`;
      }
      const head = usage.length > width ? `  ${usage}\n${' '.repeat(width + 4)}` : `  ${usage.padEnd(width)}  `;
      return head + wrapped.join(`\n${' '.repeat(width + 4)}`);
    })
    .join('\n');
};

/** `mesh log` runs and has a sub-verb (`mesh log void`): both are listed. A group (`mesh node`) has no flags of its own. */
const runsItself = (command: CommandUnknownOpts): boolean => command.options.length > 0;

/** The command `path` leads to, if any. */
export const commandAt = (program: CommandUnknownOpts, path: readonly string[]): CommandUnknownOpts | undefined => {
  let at: CommandUnknownOpts | undefined = program;
  for (const word of path) at = at?.commands.find((c) => c.name() === word || c.aliases().includes(word));
  return at;
};

export const meshProgram = (): Command => {
  const program = new Command('mesh')
    .description('mesh — the mesh control plane')
    .usage('VERB [SUB-VERB] [ARGUMENTS] [FLAGS]')
    .exitOverride()
    // A flag belongs to the verb it follows: `mesh log void 7 --json` is void's --json, not log's.
    .enablePositionalOptions()
    // Errors are reported once, by main, with the exit code and --json shape every refusal has.
    .configureOutput({ outputError: () => undefined })
    .showSuggestionAfterError(true)
    .configureHelp({ helpWidth: TABLE_WIDTH })
    // Answered by main before the program parses (src/cli/version.ts); declared for the completion scripts.
    .option(`${VERSION_FLAGS[1]}, ${VERSION_FLAGS[0]}`, 'the version, and the digest of the code that folds the log (with --json: both fields)');
  for (const define of [defineDev, defineLog, defineHistory, defineOperator, defineAudit, defineModule, defineEvents, defineSeats, defineTrust, defineStatus, defineNode, defineAssign, defineBuilds, defineBuilder, defineVault, defineSecret, definePostgres, defineProxy, defineConsole, defineController, defineAgent, defineProjections, defineCompletion]) {
    define(program);
  }
  // `mesh --help` lists every verb and sub-verb, not only the first words.
  program.configureHelp({
    helpWidth: TABLE_WIDTH,
    formatHelp: (command, helper) => `Usage: ${helper.commandUsage(command)}\n\n${helper.commandDescription(command)}\n\nOptions:\n  -h, --help     this help\n  -V, --version  the version, and the digest of the code that folds the log\n\nVerbs:\n${verbList(program)}\n`,
  });
  program.addHelpText('after', () => `\n${ENVIRONMENT}\n${helpFooter({ example: ['mesh status', 'mesh node show alpha', 'mesh help assign'], exits: [1, 3, 4, 5, 6, 7] })}`);
  return program;
};

/**
 * A parse that commander refused, as the exit code it means: help asked for is 0; help shown
 * because a sub-verb is missing, an unknown verb or flag, a missing or extra argument, 2.
 */
export const parseRefusal = (program: CommandUnknownOpts, argv: readonly string[], error: CommanderError): ValidationError | 0 => {
  if (error.exitCode === 0) return 0;
  if (error.code === 'commander.help') return new ValidationError('a verb is missing (its verbs are listed above)', { field: 'verb' });
  const message = error.message.replace(/^error: /, '').replace(/\n\(Did you mean (.+)\?\)$/, '; did you mean $1?');
  // The verb the input was meant for: where the unknown word, flag or missing argument was.
  let at: CommandUnknownOpts = program;
  for (const word of argv.filter((w) => !w.startsWith('-'))) {
    const next = at.commands.find((c) => c.name() === word);
    if (!next) break;
    at = next;
  }
  const where = at === program ? 'mesh' : `mesh ${verbsPath(at)}`;
  if (error.code === 'commander.unknownCommand') return new ValidationError(`${message} (${where} has: ${at.commands.map((c) => c.name()).join(', ')})`, { field: 'verb' });
  const flag = /'(-{1,2}[^' ]+)/.exec(message)?.[1];
  return new ValidationError(`${message} (see ${where} --help)`, { field: flag ?? 'arguments' });
};

const verbsPath = (command: CommandUnknownOpts): string => (command.parent?.parent ? `${verbsPath(command.parent)} ${command.name()}` : command.name());
