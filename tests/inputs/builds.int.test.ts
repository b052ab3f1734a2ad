import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { runMesh } from '../helpers/cli.js';
import { testDatabaseUrl } from '../helpers/database.js';
import { uniqueName } from '../helpers/names.js';
import { openTestMesh, waitFor, type TestMesh } from '../helpers/test-mesh.js';
import { dropSchemas, freshSchemas } from '../projections/harness.js';

// A build that cannot start is refused at `mesh build`, naming what is missing and where it
// looked, with nothing queued; a failed newest build keeps `mesh status` non-zero, naming the
// recipe's own last words, until a build succeeds.

const COMMIT_1 = 'a1'.repeat(20);
const COMMIT_2 = 'b2'.repeat(20);
const DIGEST = `sha256:${'c'.repeat(64)}`;

describe('builds that cannot start or did not succeed', () => {
  let t: TestMesh;
  let env: Record<string, string>;
  let pool: pg.Pool;
  const schemas = freshSchemas();
  const head = async (): Promise<number> => (await t.jsm.streams.info(t.names.logStream)).state.last_seq;
  const buildModule = (name: string, recipe: string, on: string[] = []) => ({ name, source: { url: `https://example.org/${name}.git` }, build: { recipe, output: 'out', on } });
  const status = async () => {
    const result = await runMesh(['status', '--json', '--at-least', String(await head())], env);
    return { code: result.code, machines: (JSON.parse(result.stdout) as { machines: string[] }).machines };
  };

  beforeAll(async () => {
    t = await openTestMesh();
    pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 2 });
    env = await t.startControlPlane(schemas);
  });
  afterAll(async () => {
    await t.close();
    await dropSchemas(pool, schemas);
    await pool.end();
  });

  it('refuses at mesh build a recipe that reads a base build.on does not hand, naming the variable and where it looked; nothing is submitted', async () => {
    const name = uniqueName('app');
    await t.run({ type: 'register-module', manifest: buildModule(name, 'cp -r "$MESH_BASE_NODE_RUNTIME/." out/') });
    await t.run({ type: 'move-module', module: name, commit: COMMIT_1, heardFrom: 'test' });
    const before = await head();
    const result = await runMesh(['build', name], env);
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/its recipe reads \$MESH_BASE_NODE_RUNTIME, and build\.on names no base; there is no default base.*add the base to build\.on/);
    expect(await head()).toBe(before);
    const submitted = [];
    for await (const event of t.log.read({ fromSeq: 1 })) if (event.type === 'build.submitted') submitted.push(event);
    expect(submitted).toEqual([]);
  });

  it('names a failed newest build in mesh status, with the recipe\'s last lines, until a build succeeds; a source moved with nothing built since is named too', async () => {
    const name = uniqueName('svc');
    await t.run({ type: 'register-module', manifest: buildModule(name, 'make') });
    await t.run({ type: 'move-module', module: name, commit: COMMIT_1, heardFrom: 'test' });
    const moved = await waitFor('the moved source named', async () => {
      const s = await status();
      return s.machines.some((m) => m.startsWith(`${name}: its source moved to ${COMMIT_1.slice(0, 12)} and no build of it has succeeded since`)) ? s : undefined;
    });
    expect(moved.code).toBe(1);

    await t.run({ type: 'submit-build', module: name, buildId: 'b-1', registerOnly: false, requestedBy: 'operator' });
    await t.run({ type: 'record-build', buildId: 'b-1', module: name, commit: COMMIT_1, outcome: { kind: 'failed', reason: 'the recipe failed: exited with 2: make: *** No rule to make target', output: 'make: *** No rule to make target' } });
    const failed = await waitFor('the failure named', async () => {
      const s = await status();
      return s.machines.some((m) => m.includes(`${name}: its newest build b-1 (commit ${COMMIT_1.slice(0, 12)}) failed: the recipe failed: exited with 2: make: *** No rule to make target`)) ? s : undefined;
    });
    expect(failed.code).toBe(1);

    await t.run({ type: 'submit-build', module: name, buildId: 'b-2', registerOnly: false, requestedBy: 'operator' });
    await t.run({ type: 'record-build', buildId: 'b-2', module: name, commit: COMMIT_1, outcome: { kind: 'built', digest: DIGEST, bases: [] } });
    const mended = await waitFor('the failure cleared', async () => {
      const s = await status();
      return s.machines.some((m) => m.startsWith(`${name}:`)) ? undefined : s;
    });
    expect(mended.machines.filter((m) => m.startsWith(`${name}:`))).toEqual([]);

    await t.run({ type: 'move-module', module: name, commit: COMMIT_2, heardFrom: 'test' });
    await waitFor('the next move named', async () => ((await status()).machines.some((m) => m.startsWith(`${name}: its source moved to ${COMMIT_2.slice(0, 12)}`)) ? true : undefined));

    // The operator keeps what runs: the move is no longer a problem, and keeping again is refused.
    const refusedWithoutReason = await runMesh(['module', 'keep', name], env);
    expect(refusedWithoutReason.code).toBe(2);
    expect(refusedWithoutReason.stderr).toContain('mesh module keep MODULE --reason TEXT');
    const kept = await runMesh(['module', 'keep', name, '--reason', 'the new version waits for its base'], env);
    expect({ code: kept.code, stderr: kept.stderr }).toEqual({ code: 0, stderr: '' });
    expect(kept.stdout).toContain(`${name} keeps the version it runs`);
    await waitFor('the kept move cleared', async () => ((await status()).machines.some((m) => m.startsWith(`${name}:`)) ? undefined : true));
    const before = await head();
    const again = await runMesh(['module', 'keep', name, '--reason', 'once more'], env);
    expect(again.code).toBe(3);
    expect(again.stderr).toContain('nothing to keep');
    expect(await head()).toBe(before);
  });
});
