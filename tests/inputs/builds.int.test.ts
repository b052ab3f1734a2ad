import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { assertBuildWire, jobsStreamName, probeSubject } from '../../src/adapters/nats/build-streams.js';
import { projectRoot } from '../../src/config.js';
import { testNatsUrl } from '../helpers/log.js';
import { runMesh } from '../helpers/cli.js';
import { testDatabaseUrl } from '../helpers/database.js';
import { uniqueName } from '../helpers/names.js';
import { openTestMesh, waitFor, type TestMesh } from '../helpers/test-mesh.js';
import { dropSchemas, freshSchemas } from '../projections/harness.js';
import { eventOf } from '../helpers/given.js';

// A build that cannot start is refused at `mesh build`, naming what is missing and where it
// looked, with nothing queued (a folder missing from the commit: found by a real `mesh builder`); a failed newest build keeps `mesh status` non-zero, naming the
// recipe's own last words, until a build succeeds.

const COMMIT_1 = 'a1'.repeat(20);
const COMMIT_2 = 'b2'.repeat(20);
const DIGEST = `sha256:${'c'.repeat(64)}`;

describe('builds that cannot start or did not succeed', () => {
  let t: TestMesh;
  let env: Record<string, string>;
  let pool: pg.Pool;
  let builder: ChildProcess | undefined;
  const scratch = mkdtempSync(join(tmpdir(), 'mesh-probe-'));
  const schemas = freshSchemas();
  const head = async (): Promise<number> => (await t.jsm.streams.info(t.names.logStream)).state.last_seq;
  const buildModule = (name: string, recipe: string, on: string[] = []) => ({ name, source: { url: `https://example.org/${name}.git` }, build: { recipe, output: 'out', on } });
  const events = async (type: string) => {
    const found = [];
    for await (const event of t.log.read({ fromSeq: 1 })) if (event.type === type) found.push(event);
    return found;
  };
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
    if (builder?.pid && builder.exitCode === null) process.kill(-builder.pid, 'SIGKILL');
    rmSync(scratch, { recursive: true, force: true });
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
    expect(refusedWithoutReason.stderr).toContain("required option '--reason <text>' not specified (see mesh module keep --help)");
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

  it('refuses at mesh build a source without the module\'s folder at the commit, as a holder of mesh-build-machine found it; the right path is submitted, saying it was checked', async () => {
    const git = (cwd: string, ...args: string[]): string => {
      const result = spawnSync('git', ['-c', 'user.name=test', '-c', 'user.email=test@example.org', ...args], { cwd, encoding: 'utf8' });
      if (result.status !== 0) throw new Error(`git ${args.join(' ')}: ${result.stderr}`);
      return result.stdout.trim();
    };
    const repo = join(scratch, 'shop');
    mkdirSync(join(repo, 'api', 'files'), { recursive: true });
    writeFileSync(join(repo, 'api', 'files', 'v'), 'api 1');
    git(repo, 'init', '-q', '-b', 'main');
    git(repo, 'add', '-A');
    git(repo, 'commit', '-q', '-m', 'first');
    const commit = git(repo, 'rev-parse', 'HEAD');
    const url = `file://${repo}`;
    const name = uniqueName('api');
    const manifest = (path: string) => ({ name, source: { url, path }, build: { recipe: 'mkdir -p out && cp -r files/. out/', output: 'out', on: [] } });
    const jobs = async (): Promise<number> => (await t.jsm.streams.info(jobsStreamName(t.names))).state.messages;
    // The seat's queue, as the control plane asserts it; nothing here hands jobs out, so what is in it was queued by the command.
    await assertBuildWire(t.nc, t.jsm, { prefix: t.names.prefix, ackWaitMs: 3_000 });
    await t.run({ type: 'register-module', manifest: manifest('apii') });
    await t.run({ type: 'move-module', module: name, commit, heardFrom: 'test' });

    // Nobody holds mesh-build-machine: submitted as before, saying the source was not checked.
    const unchecked = await runMesh(['build', name, '--register-only'], env);
    expect({ code: unchecked.code, stderr: unchecked.stderr }).toEqual({ code: 0, stderr: '' });
    expect(unchecked.stdout).toContain('the source could not be checked: no holder of mesh-build-machine answered (none is on the bus)');
    // That build is recorded as failed, as the builder would say, so the module can be built again.
    const [submitted] = (await events('build.submitted')).map((e) => eventOf(e, 'build.submitted')).filter((e) => e.data.module === name);
    await t.run({ type: 'record-build', buildId: submitted?.data.buildId ?? '', module: name, commit, outcome: { kind: 'failed', reason: 'the source has no folder apii', output: '' } });

    builder = spawn(process.execPath, [join(projectRoot, 'bin', 'mesh.js'), 'builder', '--name', 'probe-builder'], {
      cwd: projectRoot,
      env: { ...process.env, MESH_NATS_URL: testNatsUrl(), MESH_SUBJECT_PREFIX: t.names.prefix },
      stdio: ['ignore', process.env.MESH_TEST_LOG ? 'inherit' : 'ignore', 'inherit'],
      detached: true,
    });
    await waitFor('the builder to answer the probe', async () => (await t.nc.request(probeSubject(t.names.prefix), JSON.stringify({ source: { url }, commit, path: 'api' }), { timeout: 5_000 }).then(() => true, () => false)) || undefined);

    const before = await head();
    const queued = await jobs();
    const refused = await runMesh(['build', name], env);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain(`building module ${name} refused`);
    expect(refused.stderr).toContain(`${name}'s source.path apii: the source has no folder apii at commit ${commit} (the commit's tree has nothing at apii; looked in ${url}, ref main, for apii, asked probe-builder)`);
    expect(refused.stderr).toMatch(/correct source\.path in .*'s manifest .* and register it again/);
    expect(await head()).toBe(before);
    expect(await jobs()).toBe(queued);

    await t.run({ type: 'register-module', manifest: manifest('api') });
    const afterFix = await head();
    const built = await runMesh(['build', name], env);
    expect({ code: built.code, stderr: built.stderr }).toEqual({ code: 0, stderr: '' });
    expect(built.stdout).toContain(`at ${commit} submitted to mesh-build-machine; source checked: ${url} has api at ${commit} (asked probe-builder)`);
    expect(await head()).toBe(afterFix + 1);
  });
});
