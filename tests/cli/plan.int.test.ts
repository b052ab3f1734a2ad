import { describe, expect, it } from '@jest/globals';
import { commandAt, meshProgram } from '../../src/cli/program.js';
import { verbsOf } from '../../src/cli/verbs.js';
import type { CliResult } from '../helpers/cli.js';
import { cliMeshSuite } from '../helpers/cli-mesh.js';
import { fixtureManifest } from '../helpers/given.js';
import { uniqueName } from '../helpers/names.js';

// `--plan` on every mutating verb, through the CLI against a real controller: a plan that would be
// carried out says, per node, how its declaration would change, and appends nothing (the log's
// last sequence is the same before and after); a refused plan exits as the command would, naming
// the refusal, and appends nothing.

describe('mesh … --plan: what a command would do to each node, with nothing appended', () => {
  const names = { web: uniqueName('web'), seat: uniqueName('desk'), one: uniqueName('one'), two: uniqueName('two'), spare: uniqueName('spare') };
  /** A greeter under a fresh name, holding a fresh seat; `greeting` changes what its file says. */
  const web = (greeting = 'hello'): Record<string, unknown> => {
    const manifest = fixtureManifest('greeter');
    const requires = (manifest.requires as { name: string; default?: unknown }[]).map((r) => (r.name === 'greeting' ? { ...r, default: greeting } : r.name === 'port' ? { ...r, default: 28_000 + Math.floor(Math.random() * 1000) } : r));
    return { ...manifest, name: names.web, requires, provides: [], seats: [{ name: names.seat, scope: 'mesh' }], canHold: [names.seat] };
  };
  let webFile = '';
  const { mesh, manifestFile, refused, head } = cliMeshSuite('plan', ({ manifestFile }) => {
    webFile = manifestFile(web());
    return [
      ['module', 'register', manifestFile(fixtureManifest('nats'))],
      ['module', 'register', webFile],
      ['node', 'add', names.one],
      ['node', 'add', names.two],
      ['node', 'add', names.spare],
      ['assign', 'nats', names.one, '--hold', 'mesh-broker'],
      ['assign', names.web, names.one, '--hold', names.seat],
      ['node', 'cordon', names.spare],
    ];
  });

  /** Runs a plan that would be carried out: exit 0, the log where it was. */
  const planned = async (...args: string[]): Promise<CliResult> => {
    const before = await head();
    const result = await mesh(...args, '--plan');
    expect({ args, code: result.code, stderr: result.stderr }).toMatchObject({ args, code: 0 });
    expect(result.stdout).toContain(args.includes('--json') ? '"appended":false' : 'nothing was appended (--plan)');
    expect(await head()).toBe(before);
    return result;
  };

  it('every verb that changes the mesh (each takes --command-id) takes --plan', () => {
    const program = meshProgram();
    const mutating = verbsOf(program).filter((path) => commandAt(program, path)?.options.some((o) => o.long === '--command-id'));
    expect(mutating.length).toBeGreaterThanOrEqual(17);
    const without = mutating.filter((path) => !commandAt(program, path)?.options.some((o) => o.long === '--plan')).map((path) => path.join(' '));
    expect(without).toEqual([]);
  });

  describe('assign and unassign', () => {
    it('an assignment planned names the node, the module added and its resources; --json is one document', async () => {
      const text = await planned('assign', names.web, names.two);
      expect(text.stdout).toContain(`node ${names.two}: its declaration would change`);
      expect(text.stdout).toMatch(new RegExp(`\\+ ${names.web} \\(definitionVersion 1`));
      expect(text.stdout).toMatch(new RegExp(`\\+ process ${names.web}/server`));
      const json = await planned('assign', names.web, names.two, '--json');
      const lines = json.stdout.trim().split('\n');
      expect(lines).toHaveLength(1);
      const plan = JSON.parse(lines[0] as string) as { ok: boolean; plan: boolean; appended: boolean; events: { type: string }[]; nodes: { node: string; modules: { module: string; change: string }[] }[] };
      expect(plan).toMatchObject({ ok: true, plan: true, appended: false });
      expect(plan.events.map((e) => e.type)).toContain('assignment.created');
      expect(plan.nodes.map((n) => n.node)).toEqual([names.two]);
      expect(plan.nodes[0]?.modules).toEqual([expect.objectContaining({ module: names.web, change: 'added' })]);
    });

    it('an assignment to a cordoned node is refused (exit 3), naming why, and appends nothing', async () => {
      expect(await refused(['assign', names.web, names.spare, '--plan'], 3)).toMatch(/cordoned/);
    });

    it('an unassignment planned names the module removed', async () => {
      const result = await planned('unassign', names.web, names.one);
      expect(result.stdout).toContain(`- ${names.web}`);
    });
  });

  describe('nodes', () => {
    it('cordon and uncordon change no declaration, and say so', async () => {
      expect((await planned('node', 'cordon', names.two)).stdout).toContain("no node's declaration would change");
      expect((await planned('node', 'uncordon', names.spare)).stdout).toContain("no node's declaration would change");
    });

    it('a node added is planned from no node to its declaration', async () => {
      expect((await planned('node', 'add', uniqueName('new'))).stdout).toMatch(/not a node \(an empty declaration\) → its declaration/);
    });

    it('removing a node something runs on is refused (exit 3), naming what; --drain plans each unassignment, then the removal', async () => {
      expect(await refused(['node', 'remove', names.one, '--plan'], 3)).toContain(names.web);
      const drained = await planned('node', 'remove', names.one, '--drain');
      expect(drained.stdout).toContain(`node ${names.one}: its declaration → not a node (an empty declaration)`);
      expect(drained.stdout).toContain(`- ${names.web}`);
      expect(drained.stdout).toContain('- nats');
    });

    it('a token planned shows no token: none is made', async () => {
      const result = await planned('node', 'token', '--node', names.two);
      expect(result.stdout).toContain('enrolment.token-issued');
      expect(result.stdout.split('\n')[0]).toMatch(/^plan at log seq \d+/);
    });
  });

  describe('seats', () => {
    it('a rename planned shows the holder’s declaration naming the seat anew', async () => {
      const renamed = uniqueName('counter');
      const result = await planned('seat', 'rename', names.seat, renamed);
      expect(result.stdout).toContain(`node ${names.one}`);
      expect(result.stdout).toMatch(new RegExp(`~ ${names.web} \\(seats ${names.seat} → ${renamed}\\)`));
    });

    it('a handover from a holder that does not hold it is refused, and appends nothing', async () => {
      const stderr = await refused(['seat', 'handover', names.seat, '--to', `${names.one}/nats`, '--from', `${names.two}/${names.web}`, '--plan'], 3);
      expect(stderr).toContain(names.seat);
    });
  });

  describe('modules', () => {
    it('a new definition planned names the version and the resources that change', async () => {
      const result = await planned('module', 'register', manifestFile(web('good evening')));
      expect(result.stdout).toMatch(new RegExp(`~ ${names.web} \\(definitionVersion 1 → 2\\)`));
      expect(result.stdout).toMatch(new RegExp(`~ file ${names.web}/greeting-text: content`));
    });

    it('the same definition again would append nothing', async () => {
      expect((await planned('module', 'register', webFile)).stdout).toContain('it would append nothing');
    });

    it('a rollout policy is planned; a keep with nothing to keep and a build of a module with no source are refused', async () => {
      expect((await planned('module', 'rollout', names.web, 'record')).stdout).toContain('module.rollout-set');
      expect(await refused(['module', 'keep', names.web, '--reason', 'kept by hand', '--plan'], 3)).toContain(names.web);
      expect(await refused(['build', names.web, '--plan'], 3)).toContain(names.web);
    });
  });

  describe('operators and the log', () => {
    it('adding an operator is planned; revoking the last one and voiding a commit that verifies are refused', async () => {
      expect((await planned('operator', 'add', uniqueName('grace'), '--key', 'A'.repeat(43) + '=')).stdout).toContain('operator.added');
      expect(await refused(['operator', 'revoke', 'ada', '--plan'], 3)).toContain('last operator');
      expect(await refused(['log', 'void', '2', '--reason', 'a good commit', '--plan'], 3)).toMatch(/verif/);
    });
  });
});
