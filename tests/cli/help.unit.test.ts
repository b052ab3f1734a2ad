import { execFileSync } from 'node:child_process';
import { describe, expect, it } from '@jest/globals';
import { CommanderError, type CommandUnknownOpts } from '@commander-js/extra-typings';
import { bashCompletion, zshCompletion } from '../../src/cli/completion.js';
import { commandAt, meshProgram } from '../../src/cli/program.js';
import { TABLE_WIDTH } from '../../src/cli/output.js';
import { verbsOf } from '../../src/cli/verbs.js';
import { runMesh } from '../helpers/cli.js';

// The help of every verb, listed from the CLI's own definition (so a verb added there is checked
// here with no list to keep): `--help` and `-h` answer 0 on stdout, name every flag the verb
// takes, an example and its exit codes, in at most 100 columns. No server is needed for any of it.

const program = meshProgram();
const verbs = verbsOf(program);

/** What `mesh ARGS` prints when it asks for help, parsed by the CLI's definition in this process. */
const helpInProcess = async (args: string[]): Promise<{ code: number; stdout: string; stderr: string }> => {
  const own = meshProgram();
  let stdout = '';
  let stderr = '';
  const capture = (command: CommandUnknownOpts): void => {
    command.configureOutput({ writeOut: (text) => (stdout += text), writeErr: (text) => (stderr += text), outputError: () => undefined });
    command.commands.forEach(capture);
  };
  capture(own);
  try {
    await own.parseAsync(args, { from: 'user' });
    return { code: 0, stdout, stderr };
  } catch (error) {
    if (error instanceof CommanderError) return { code: error.exitCode, stdout, stderr };
    throw error;
  }
};

describe('mesh --help', () => {
  it('lists every verb and sub-verb of the definition, mesh node token among them', async () => {
    expect(verbs.length).toBeGreaterThan(40);
    const help = await runMesh(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^ {2}node token\s/m);
    // Each verb once: one list, not one before the footer and another after it.
    expect(help.stdout.match(/^Verbs:$/gm)).toHaveLength(1);
    expect(help.stdout.match(/^ {2}node token\s/gm)).toHaveLength(1);
    for (const path of verbs) if ((commandAt(program, path)?.commands.length ?? 0) === 0) expect(help.stdout).toContain(`  ${path.join(' ')}`);
    expect(help.stdout).toContain('Exit codes:');
  });

  it('is what `mesh` alone, `mesh -h` and `mesh help` print, exiting 0', async () => {
    const [alone, short, word] = await Promise.all([runMesh([]), runMesh(['-h']), runMesh(['help'])]);
    for (const result of [alone, short, word]) {
      expect(result.code).toBe(0);
      expect(result.stdout).toContain('Verbs:');
    }
    expect(short.stdout).toBe(alone.stdout);
  });

  it('suggests the nearest verb for a typo, exiting 2', async () => {
    const typo = await runMesh(['stauts']);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('did you mean status?');
    const sub = await runMesh(['node', 'shwo', 'alpha']);
    expect(sub.code).toBe(2);
    expect(sub.stderr).toContain('did you mean show?');
    expect(sub.stderr).toContain('mesh node has: add, list, show, cordon, uncordon, domain, remove, token');
    const json = await runMesh(['nod', '--json']);
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: false, error: { code: 'validation', field: 'verb' } });
  });

  it('prints a group\'s help to stderr and exits 2 when its sub-verb is missing', async () => {
    const missing = await runMesh(['seat']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('handover');
    expect(missing.stderr).toContain('a verb is missing');
  });
});

describe.each(verbs.map((path) => [path.join(' '), path] as const))('mesh %s', (_name, path) => {
  const command = commandAt(program, path);
  const flags = (command?.options ?? []).filter((o) => !o.hidden).map((o) => o.long ?? o.short ?? '');

  it.each(['--help', '-h'])('%s: exit 0, its flags, an example and its exit codes, in 100 columns', async (asked) => {
    // Through the definition in this process: a process per verb would be most of this suite's
    // time. The same through the command itself, its exit code and streams, is checked below.
    const result = await helpInProcess([...path, asked]);
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
    expect(result.stdout).toContain(`Usage: mesh ${path.join(' ')}`);
    for (const flag of flags) expect(result.stdout).toContain(flag);
    expect(result.stdout).toMatch(/Examples?:\n {2}\S/);
    expect(result.stdout).toContain('Exit codes:\n  0  done');
    for (const line of result.stdout.split('\n')) expect(line.length).toBeLessThanOrEqual(TABLE_WIDTH);
  });
});

describe('a verb\'s help through the command itself', () => {
  it.each([['node', 'token'], ['status'], ['secret', 'rotate']])('mesh %s … --help: exit 0, the help on stdout, what the definition prints', async (...path) => {
    const [run, inProcess] = await Promise.all([runMesh([...path, '--help']), helpInProcess([...path, '--help'])]);
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    expect(run.stdout).toBe(inProcess.stdout);
  });
});

describe('mesh completion', () => {
  /** What bash completes after `words` (the last one being typed), with the script loaded. */
  const complete = (script: string, words: string[]): string[] => {
    const program = `${script}\nCOMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _mesh; printf '%s\\n' "\${COMPREPLY[@]}"`;
    return execFileSync('bash', ['-c', program], { encoding: 'utf8' }).split('\n').filter(Boolean);
  };

  it('writes a bash script from the definition that completes verbs, sub-verbs and flags', async () => {
    const printed = await runMesh(['completion', 'bash']);
    expect(printed.code).toBe(0);
    expect(printed.stdout.trim()).toBe(bashCompletion(program).trim());
    expect(complete(printed.stdout, ['mesh', 'no'])).toEqual(['node']);
    expect(complete(printed.stdout, ['mesh', 'node', ''])).toEqual(['add', 'list', 'show', 'cordon', 'uncordon', 'domain', 'remove', 'token']);
    expect(complete(printed.stdout, ['mesh', '--json', 'node', 'show', '--'])).toEqual(['--json', '--at-least', '--at', '--output', '--help']);
    expect(complete(printed.stdout, ['mesh', 'seat', 'handover', 'x', '--t'])).toEqual(['--to']);
  });

  it('writes a zsh script naming every verb with its summary', async () => {
    const printed = await runMesh(['completion', 'zsh']);
    expect(printed.code).toBe(0);
    expect(printed.stdout.startsWith('#compdef mesh\n')).toBe(true);
    expect(printed.stdout.trim()).toBe(zshCompletion(program).trim());
    for (const path of verbs) expect(printed.stdout).toContain(`'${path.join(' ')}')`);
    expect(printed.stdout).toContain("'token:an enrolment token for a node'\\''s agent, shown once'");
  });

  it('refuses a shell it does not write for, exiting 2', async () => {
    const fish = await runMesh(['completion', 'fish']);
    expect(fish.code).toBe(2);
    expect(fish.stderr).toContain('bash, zsh');
  });
});
