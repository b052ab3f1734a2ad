import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stopRecordedProcesses } from '../../src/agent/left-running.js';
import { meshHome, projectRoot } from '../../src/config.js';
import { freePort } from '../../src/dev/ports.js';
import { runMesh } from '../helpers/cli.js';
import { uniqueName } from '../helpers/names.js';
import { processesNaming } from '../demo/processes.js';

// The README's "A first mesh, by hand", word for word: its shell blocks are read from the README
// itself (a change there is what this runs), on top of a mesh `mesh dev up --demo` raised (what
// `npm start` runs) in a folder and on ports of this file's own. Every command must exit 0, and
// the last `mesh status` must say the mesh does what it was told.

const SECTION = '## A first mesh, by hand';

/** The commands of the section's ```sh blocks, in order: a line ending in \ goes on on the next. */
const walkThrough = (readme: string): string[] => {
  const start = readme.indexOf(SECTION);
  if (start < 0) throw new Error(`the README has no section "${SECTION}"`);
  const rest = readme.slice(start + SECTION.length);
  const section = rest.slice(0, rest.search(/^## /m) < 0 ? undefined : rest.search(/^## /m));
  const commands: string[] = [];
  for (const [, block] of section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)) {
    let pending = '';
    for (const line of (block ?? '').split('\n')) {
      if (line.trim() === '') continue;
      if (line.endsWith('\\')) pending += `${line}\n`;
      else {
        commands.push(pending + line);
        pending = '';
      }
    }
  }
  return commands;
};

interface Ran {
  command: string;
  code: number;
}

/**
 * Runs the commands in one bash, as an operator types them into one terminal (so `kill %1` finds
 * the job the walk-through started), in its own process group. After each command, its exit code
 * goes to a file of the test's own; what the commands print goes to `output`.
 */
const runInOneShell = (commands: readonly string[], env: Record<string, string | undefined>, dir: string): Promise<{ ran: Ran[]; output: string; group: number }> =>
  new Promise((resolvePromise, reject) => {
    const codes = join(dir, 'exit-codes');
    const script = ['exec 3>"$WALK_THROUGH_CODES"', ...commands.flatMap((command, i) => [command, `echo "${i} $?" >&3`])].join('\n');
    const merged: Record<string, string | undefined> = { ...process.env, ...env, WALK_THROUGH_CODES: codes };
    for (const key of Object.keys(merged)) if (merged[key] === undefined) delete merged[key];
    const shell = spawn('bash', ['-c', script], { cwd: projectRoot, env: merged, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let output = '';
    shell.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    shell.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => reject(new Error(`the walk-through did not finish in 5 minutes:\n${output}`)), 300_000);
    shell.once('exit', () => {
      clearTimeout(timer);
      const exits = existsSync(codes) ? readFileSync(codes, 'utf8').trim().split('\n').filter(Boolean) : [];
      const ran = exits.map((line) => {
        const [index, code] = line.split(' ').map(Number);
        return { command: commands[index ?? -1] ?? '?', code: code ?? -1 };
      });
      resolvePromise({ ran, output, group: shell.pid ?? 0 });
    });
  });

describe("the README's walk-through, word for word, on npm start's mesh", () => {
  const home = join(meshHome(), 'tmp', uniqueName('readme-'));
  let env: Record<string, string | undefined>;
  let ports: number[] = [];
  let group = 0;
  const mesh = (args: string[], timeoutMs = 60_000) => runMesh(args, env, timeoutMs);

  beforeAll(async () => {
    ports = [];
    while (ports.length < 6) {
      const port = await freePort();
      if (!ports.includes(port)) ports.push(port);
    }
    const [nats, postgres, http, greeter, caller, guestbookPostgres] = ports;
    // Every MESH_ variable of the test stack is dropped: the verbs find this mesh from its folder,
    // as they do after `npm start`. MESH_HOME is this file's own, so the agents' state and the
    // walk-through's files stay in it.
    env = Object.fromEntries(Object.keys(process.env).filter((k) => k.startsWith('MESH_')).map((k) => [k, undefined]));
    Object.assign(env, {
      MESH_HOME: home,
      MESH_DEV_NATS_PORT: String(nats),
      MESH_DEV_PG_PORT: String(postgres),
      MESH_DEV_HTTP_PORT: String(http),
      MESH_DEMO_GREETER_PORT: String(greeter),
      MESH_DEMO_CALLER_PORT: String(caller),
      MESH_DEMO_POSTGRES_PORT: String(guestbookPostgres),
    });
    mkdirSync(home, { recursive: true });
    const up = await mesh(['dev', 'up', '--demo'], 240_000);
    // What it said, whole, when it failed: the stack's own words are the diagnosis.
    if (up.code !== 0) throw new Error(`mesh dev up --demo exited ${up.code}:\n${up.stderr}\n${up.stdout}`);
    expect(up.stdout).toContain('the mesh is up, and doing what it was told.');
  }, 300_000);

  afterAll(async () => {
    // What the walk-through started and did not stop: its shell's process group, and what gamma's agent ran.
    if (group > 0) {
      try {
        process.kill(-group, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    stopRecordedProcesses(join(home, 'agent', 'gamma'), 'SIGKILL');
    await mesh(['dev', 'down'], 120_000).catch(() => undefined);
    for (const left of processesNaming(home, ports)) {
      try {
        process.kill(left.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    rmSync(home, { recursive: true, force: true });
  }, 180_000);

  it('reads the commands from the README: the node added, its agent started, a module assigned, then taken out again', () => {
    const commands = walkThrough(readFileSync(join(projectRoot, 'README.md'), 'utf8'));
    expect(commands.some((c) => /npx mesh agent --node gamma/.test(c))).toBe(true);
    expect(commands.some((c) => c.startsWith('npx mesh node remove gamma --drain'))).toBe(true);
    expect(commands.filter((c) => c.startsWith('npx mesh status')).at(-1)).toBeDefined();
  });

  it('runs every command, each exiting 0, and the last mesh status says the mesh does what it was told', async () => {
    const commands = walkThrough(readFileSync(join(projectRoot, 'README.md'), 'utf8'));
    const { ran, output, group: started } = await runInOneShell(commands, env, home);
    group = started;
    writeFileSync(join(home, 'walk-through.out'), output);
    const agentLog = join(home, 'agent-gamma.log');
    if (ran.length !== commands.length || ran.some((r) => r.code !== 0)) {
      const tail = existsSync(agentLog) ? readFileSync(agentLog, 'utf8').split('\n').slice(-15).join('\n') : '(no agent log)';
      throw new Error(`the walk-through did not run clean: ${JSON.stringify(ran, null, 2)}\n--- what it printed ---\n${output}\n--- gamma's agent, last lines ---\n${tail}`);
    }
    // The last status's verdict is the last one printed.
    const verdicts = output.split('\n').filter((line) => line.startsWith('the mesh is'));
    expect(verdicts.at(-1)).toBe('the mesh is doing what it was told');
    // gamma ran the listener, and is gone from the mesh now, its removal recorded.
    const show = await mesh(['node', 'show', 'gamma']);
    expect(show.stdout).toMatch(/^node gamma: removed at log seq \d+/);
    const history = await mesh(['history', 'node.gamma', '--json']);
    const types = history.stdout.trim().split('\n').map((line) => (JSON.parse(line) as { type: string }).type);
    expect(types.filter((type) => type.startsWith('node.'))).toEqual(['node.added', 'node.enrolled', 'node.cordoned', 'node.removed']);
    // What it ran, in its history: assigned, applied on the machine (a fact its agent reported), unassigned.
    expect(types).toEqual(expect.arrayContaining(['assignment.created', 'fact.applied', 'assignment.removed']));
    const log = await mesh(['log', '--type', 'assignment.removed', '--json']);
    expect(log.stdout).toContain('"module":"listener","node":"gamma"');
  }, 360_000);
});
