import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { TABLE_WIDTH } from '../../src/cli/output.js';
import { commandAt, meshProgram } from '../../src/cli/program.js';
import { verbsOf } from '../../src/cli/verbs.js';
import { meshHome } from '../../src/config.js';
import { operatorCli } from '../helpers/cli.js';
import { fixtureManifest, minimalModule } from '../helpers/given.js';
import { uniqueName } from '../helpers/names.js';
import { openTestMesh, type TestMesh } from '../helpers/test-mesh.js';
import { dropSchemas, freshSchemas, openPool } from '../projections/harness.js';

// Every human-readable table has a header and fits 100 columns; `-o wide` gives its rows in full;
// `--json` is one JSON document per line. Run against a real mesh whose nodes, modules and
// seats have long names (27 to 31 characters, the longest a name may be), so nothing fits by luck.

/** Each verb that prints a table (every verb that takes -o), the arguments it runs with, and the headers it must print. */
const TABLE_VERBS = (names: { node: string; module: string }): Record<string, { args: string[]; headers: RegExp[] }> => ({
  log: { args: ['log'], headers: [/^SEQ\s+TIME \(UTC\)\s+AGGREGATE@VERSION\s+TYPE\s+ACTOR$/m] },
  history: { args: ['history', names.node], headers: [/^SEQ\s+TIME \(UTC\)\s+AGGREGATE@VERSION\s+TYPE\s+ACTOR$/m] },
  'node list': { args: ['node', 'list'], headers: [/^NODE\s+STATE\s+ROOT\s+MODULES$/m] },
  'node show': { args: ['node', 'show', names.node], headers: [] },
  'module list': { args: ['module', 'list'], headers: [/^MODULE\s+DEFINITION\s+PROVIDES$/m] },
  seats: { args: ['seats'], headers: [/^SEAT\s+SCOPE\s+DELIVERS\s+DECLARED BY\s+HOLDER$/m] },
  'operator list': { args: ['operator', 'list'], headers: [/^OPERATOR\s+STATE\s+PUBLIC KEY$/m] },
  'projections status': { args: ['projections', 'status'], headers: [/^PROJECTION\s+STATUS\s+VERSION\s+CHECKPOINT\s+HEAD\s+LAG\s+LAG\(s\)\s+STALL$/m] },
  graph: { args: ['graph'], headers: [/^MODULE\s+VERSION\s+STATE$/m] },
  'secret status': { args: ['secret', 'status'], headers: [/^SECRET\s+VERSION\s+ROTATION\s+RECIPIENTS\s+PURPOSE$/m] },
  status: { args: ['status'], headers: [/^ {2}NODE\s+AGENT\s+STATE\s+ASSIGNED$/m, /^ {2}NODE\s+HEARD\s+DECLARATION\s+RUNNING$/m] },
});

describe('tables fit 100 columns, with headers; -o wide gives full rows; --json is a document a line', () => {
  let t: TestMesh;
  let env: Record<string, string>;
  const schemas = freshSchemas();
  const pool = openPool();
  // 27 to 31 characters: names are at most 31.
  const names = { node: uniqueName('a-long-node-name-'), other: uniqueName('another-long-node-'), module: uniqueName('a-long-module-name-'), seat: uniqueName('a-long-seat-name-') };
  const verbs = TABLE_VERBS(names);
  const dir = join(meshHome(), 'tmp', uniqueName('tables-'));
  const { mesh, manifestFile } = operatorCli(() => ({ env, logHead: async () => 0 }), dir);

  beforeAll(async () => {
    mkdirSync(dir, { recursive: true });
    t = await openTestMesh();
    env = await t.startControlPlane(schemas);
    // Every change through the CLI, so the log's actors and command ids are what an operator's are.
    const steps = [
      ['module', 'register', manifestFile(fixtureManifest('nats'))],
      ['module', 'register', manifestFile(minimalModule(names.module, { provides: [{ provision: 'a-long-provision-name' }], seats: [{ name: names.seat, scope: 'mesh' }], canHold: [names.seat] }))],
      ['node', 'add', names.node, '--root', `/srv/a-rather-long-root-folder/${names.node}`, '--address', `${names.node}.mesh.example.org`],
      ['node', 'add', names.other],
      ['assign', 'nats', names.node, '--hold', 'mesh-broker'],
      ['assign', names.module, names.node, '--hold', names.seat],
      ['node', 'cordon', names.other],
    ];
    for (const step of steps) expect({ step, ...(await mesh(...step)) }).toMatchObject({ step, code: 0 });
  }, 120_000);

  afterAll(async () => {
    await t.close();
    await dropSchemas(pool, schemas);
    await pool.end();
    rmSync(dir, { recursive: true, force: true });
  });

  it('covers every verb of the definition that prints a table (every verb that takes -o)', () => {
    const program = meshProgram();
    const withOutput = verbsOf(program)
      .filter((path) => commandAt(program, path)?.options.some((o) => o.long === '--output'))
      .map((path) => path.join(' '));
    expect(withOutput.sort()).toEqual(Object.keys(verbs).sort());
  });

  it.each(Object.keys(verbs))('mesh %s: every line at most 100 columns, its headers printed', async (verb) => {
    const { args, headers } = verbs[verb] as { args: string[]; headers: RegExp[] };
    const result = await mesh(...args);
    // `mesh status` answers 1: the nodes have no agent, so nothing is heard from them.
    expect({ code: result.code, stderr: result.stderr }).toMatchObject({ code: verb === 'status' ? 1 : 0 });
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines.filter((line) => line.length > TABLE_WIDTH)).toEqual([]);
    for (const header of headers) expect(result.stdout).toMatch(header);
  });

  it('the long names are there, clipped or wrapped, and -o wide gives every row in full', async () => {
    const narrow = await mesh('log');
    expect(narrow.stdout).toContain(`assignment.${names.node.slice(0, 8)}`);
    const wide = await mesh('log', '-o', 'wide');
    expect(wide.code).toBe(0);
    expect(wide.stdout).toMatch(/^SEQ\s+TIME\s+AGGREGATE@VERSION\s+TYPE\s+ACTOR\s+COMMAND$/m);
    const row = wide.stdout.split('\n').find((line) => line.includes(`assignment.${names.node}.${names.module}@1`));
    expect(row).toMatch(/assignment\.created\s+operator:\S+\s+\S+$/);
    expect((row ?? '').length).toBeGreaterThan(TABLE_WIDTH);
    // The data of an event is wrapped beneath its row by default, one line when wide.
    const data = JSON.stringify({ node: names.node, root: `/srv/a-rather-long-root-folder/${names.node}`, address: `${names.node}.mesh.example.org` });
    expect(narrow.stdout.replace(/\n {9}/g, '')).toContain(data);
    expect(wide.stdout).toContain(`${' '.repeat(9)}${data}`);

    const nodes = await mesh('node', 'list', '-o', 'wide');
    expect(nodes.stdout).toMatch(new RegExp(`^${names.node}\\s+ready\\s+/srv/a-rather-long-root-folder/${names.node}\\s+${names.module}, nats$`, 'm'));
    expect(nodes.stdout).toMatch(new RegExp(`^${names.other}\\s+cordoned\\s+/var/lib/mesh\\s+\\(nothing assigned\\)$`, 'm'));
    const bad = await mesh('node', 'list', '-o', 'tall');
    expect({ code: bad.code, stderr: bad.stderr }).toMatchObject({ code: 2, stderr: expect.stringContaining('-o "tall" is not a format') });
  });

  it.each(Object.keys(verbs))('mesh %s --json: one JSON document per line', async (verb) => {
    const { args } = verbs[verb] as { args: string[] };
    const result = await mesh(...args, '--json');
    expect(result.code).toBe(verb === 'status' ? 1 : 0);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(() => JSON.parse(line) as unknown).not.toThrow();
  });
});
