import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Objm } from '@nats-io/obj';
import { jetstream } from '@nats-io/jetstream';
import { storeArtifact, treeDigest } from '../../src/adapters/artifacts/artifact-store.js';
import { artifactBucketName, cloneBaseSubject } from '../../src/adapters/nats/build-streams.js';
import { projectRoot } from '../../src/config.js';
import type { StoredEvent } from '../../src/domain/events/envelope.js';
import { meshEventRegistry, type MeshEvent } from '../../src/domain/registry.js';
import { meshProjections } from '../../src/projections/catalogue.js';
import { Projector } from '../../src/projections/projector.js';
import { runMesh } from '../helpers/cli.js';
import { testNatsUrl } from '../helpers/log.js';
import { openTestMesh, waitFor, type TestMesh } from '../helpers/test-mesh.js';
import { FAST, freshSchemas, testDatabaseUrl } from '../projections/harness.js';

// From a merge to a running version, against the real servers, with git repositories made here
// and real `mesh builder` processes.

const git = (cwd: string, ...args: string[]): string => {
  const result = spawnSync('git', ['-c', 'user.name=test', '-c', 'user.email=test@example.org', ...args], { cwd, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`git ${args.join(' ')}: ${result.stderr}`);
  return result.stdout.trim();
};

/** Writes files into the repository and commits them on `branch`; returns the commit. */
const commitFiles = (repo: string, files: Record<string, string>, message: string, branch = 'main'): string => {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(repo, path, '..'), { recursive: true });
    writeFileSync(join(repo, path), content);
  }
  git(repo, 'checkout', '-q', '-B', branch);
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', message);
  return git(repo, 'rev-parse', 'HEAD');
};

const newRepo = (root: string, name: string): string => {
  const repo = join(root, name);
  mkdirSync(repo, { recursive: true });
  git(repo, 'init', '-q', '-b', 'main');
  return repo;
};

/** A module built from a path of a repository, running its own artifact on whatever node it is assigned. */
const moduleOf = (name: string, source: Record<string, unknown>, recipe: string, on: string[] = []): Record<string, unknown> => ({
  name,
  source,
  resources: { containers: [{ name: 'app', image: { built: true } }] },
  build: { recipe, output: 'out', on },
});

const COPY = 'mkdir -p out && cp -r files/. out/';

let scratch: string;
const builders: ChildProcess[] = [];
const meshes: TestMesh[] = [];
const projectors: Projector<MeshEvent>[] = [];

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'mesh-builds-'));
});
afterEach(async () => {
  for (const builder of builders.splice(0)) stopBuilder(builder);
  for (const projector of projectors.splice(0)) await projector.stop();
  for (const mesh of meshes.splice(0)) await mesh.close();
});
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** `mesh builder` in a process group of its own, so killing it kills the recipe it runs too. */
const startBuilder = (mesh: TestMesh, name: string): ChildProcess => {
  const child = spawn(process.execPath, [join(projectRoot, 'bin', 'mesh.js'), 'builder', '--heartbeat-ms', '300', '--name', name], {
    cwd: projectRoot,
    env: { ...process.env, MESH_NATS_URL: testNatsUrl(), MESH_SUBJECT_PREFIX: mesh.names.prefix },
    stdio: ['ignore', process.env.MESH_TEST_LOG ? 'inherit' : 'ignore', 'inherit'],
    detached: true,
  });
  builders.push(child);
  return child;
};
const stopBuilder = (child: ChildProcess): void => {
  if (child.exitCode === null && child.pid) {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
};

const openBuildMesh = async (): Promise<TestMesh> => {
  const mesh = await openTestMesh();
  meshes.push(mesh);
  await mesh.startController();
  await mesh.startBuilds();
  return mesh;
};

const events = async (mesh: TestMesh, type: string): Promise<StoredEvent[]> => {
  const found: StoredEvent[] = [];
  for await (const event of mesh.log.read()) if (event.type === type) found.push(event);
  return found;
};

const latestOf = async (mesh: TestMesh, module: string) => (await mesh.mesh.current()).builds.latest.get(module);

/** A forge holding mesh-git that answers where its repositories are: a `file://` base on this machine. */
const holdMeshGit = async (mesh: TestMesh, base: string): Promise<void> => {
  await mesh.run({ type: 'register-module', manifest: { name: 'forge', provides: [{ provision: 'git' }], canHold: ['mesh-git'] } });
  await mesh.run({ type: 'add-node', node: 'n1' });
  await mesh.run({ type: 'assign', module: 'forge', node: 'n1', hold: ['mesh-git'], pins: {}, values: {}, placements: {} });
  mesh.nc.subscribe(cloneBaseSubject(mesh.names.prefix, 'mesh-git'), {
    callback: (_error, message) => {
      message.respond(JSON.stringify({ base: `file://${base}` }));
    },
  });
};

const assign = (mesh: TestMesh, module: string, node: string) => mesh.run({ type: 'assign', module, node, hold: [], pins: {}, values: {}, placements: {} });

describe('from a merge to a running version', () => {
  it('a merge to a repository two modules are built from (not a third on another branch): two builds of the merge commit, then the nodes run them', async () => {
    const mesh = await openBuildMesh();
    const forge = join(scratch, 'forge-1');
    const repo = newRepo(join(forge, 'acme'), 'shop');
    commitFiles(repo, { 'api/files/v': 'api 1', 'web/files/v': 'web 1' }, 'first');
    await holdMeshGit(mesh, forge);
    const onSeat = (ref: string, path: string) => ({ seat: 'mesh-git', repository: 'acme/shop', ref, path });
    await mesh.run({ type: 'register-module', manifest: moduleOf('api', onSeat('main', 'api'), COPY) });
    await mesh.run({ type: 'register-module', manifest: moduleOf('web', onSeat('main', 'web'), COPY) });
    await mesh.run({ type: 'register-module', manifest: moduleOf('docs', onSeat('docs', '.'), COPY) });
    await assign(mesh, 'api', 'n1');
    await assign(mesh, 'web', 'n1');
    startBuilder(mesh, 'b1');

    git(repo, 'checkout', '-q', '-b', 'feature');
    commitFiles(repo, { 'api/files/v': 'api 2', 'web/files/v': 'web 2' }, 'change both', 'feature');
    git(repo, 'checkout', '-q', 'main');
    git(repo, '-c', 'user.name=t', '-c', 'user.email=t@e', 'merge', '-q', '--no-ff', '-m', 'merge feature', 'feature');
    const merge = git(repo, 'rev-parse', 'HEAD');
    await jetstream(mesh.nc).publish(`${mesh.names.prefix}.seat.mesh-git.event.pull.merged`, JSON.stringify({ repository: 'acme/shop', branch: 'main', commit: merge }));

    const declared = await waitFor('n1 to be declared the new versions of api and web', async () => {
      const declaration = await mesh.declarationOf('n1');
      const artifacts = declaration?.assignments.filter((a) => a.artifact !== null) ?? [];
      return artifacts.length === 2 && declaration;
    });
    const submitted = await events(mesh, 'build.submitted');
    expect(submitted.map((e) => [(e.data as { module: string }).module, (e.data as { commit: string }).commit]).sort()).toEqual([
      ['api', merge],
      ['web', merge],
    ]);
    for (const module of ['api', 'web']) {
      const version = await latestOf(mesh, module);
      expect(version?.commit).toBe(merge);
      expect(declared.assignments.find((a) => a.module === module)?.artifact).toBe(version?.digest);
    }
    expect(await latestOf(mesh, 'docs')).toBeUndefined();
  });

  it('a build whose source lacks the folder at its path fails at the builder, recorded saying the repository, ref and path where it looked', async () => {
    const mesh = await openBuildMesh();
    const forge = join(scratch, 'forge-missing');
    const repo = newRepo(join(forge, 'acme'), 'shop');
    const commit = commitFiles(repo, { 'api/files/v': 'api 1' }, 'first', 'release');
    await holdMeshGit(mesh, forge);
    await mesh.run({ type: 'register-module', manifest: moduleOf('lost', { seat: 'mesh-git', repository: 'acme/shop', ref: 'release', path: 'services/lost' }, COPY) });
    startBuilder(mesh, 'b-missing');
    // The forge says the branch moved: the coordinator submits a build of it, unprobed, so the builder is the one that finds nothing there.
    await jetstream(mesh.nc).publish(`${mesh.names.prefix}.seat.mesh-git.event.pull.merged`, JSON.stringify({ repository: 'acme/shop', branch: 'release', commit }));
    const [failed] = await waitFor('the build recorded as failed', async () => {
      const found = (await events(mesh, 'build.failed')).filter((e) => (e.data as { module: string }).module === 'lost');
      return found.length > 0 && found;
    });
    expect((failed?.data as { reason: string }).reason).toBe(
      `the source has no folder services/lost at commit ${commit} (looked in file://${forge}/acme/shop, ref release, for services/lost): the module's source path is not in that commit`,
    );
    expect(await latestOf(mesh, 'lost')).toBeUndefined();
  });

  it('the diamond B → {C, D} → E builds E once, after C and D; a failing base leaves its dependents waiting, with no job for them', async () => {
    const mesh = await openBuildMesh();
    const repo = newRepo(scratch, 'diamond');
    // Each recipe copies its files and records what it was built on.
    const recipe = (on: string[]) => `${COPY} && echo ${on.map((b) => `$(cat "$MESH_BASE_${b.toUpperCase()}/v")`).join('+') || 'none'} > out/on`;
    const first = commitFiles(repo, { 'b/files/v': 'b1', 'c/files/v': 'c1', 'd/files/v': 'd1', 'e/files/v': 'e1' }, 'first');
    const url = `file://${repo}`;
    for (const [name, on] of [['b', []], ['c', ['b']], ['d', ['b']], ['e', ['c', 'd']]] as const) {
      await mesh.run({ type: 'register-module', manifest: moduleOf(name, { url, path: name }, recipe([...on]), [...on]) });
    }
    startBuilder(mesh, 'b1');
    await mesh.run({ type: 'move-module', module: 'b', commit: first, heardFrom: 'test' });
    await waitFor('all four built', async () => (await Promise.all(['b', 'c', 'd', 'e'].map((m) => latestOf(mesh, m)))).every(Boolean), 60_000);
    const buildsOf = async (module: string) => (await events(mesh, 'build.submitted')).filter((e) => (e.data as { module: string }).module === module);
    expect(await buildsOf('e')).toHaveLength(1);
    const e = await latestOf(mesh, 'e');
    const [c, d] = [await latestOf(mesh, 'c'), await latestOf(mesh, 'd')];
    expect(e?.bases).toEqual([
      { name: 'c', digest: c?.digest },
      { name: 'd', digest: d?.digest },
    ]);

    // B breaks: one failure, and C, D, E wait on it.
    const broken = commitFiles(repo, { 'b/files/v': 'b2', 'b/broken': 'yes' }, 'break b');
    await mesh.run({ type: 'register-module', manifest: moduleOf('b', { url, path: 'b' }, `test ! -f broken || { echo "b cannot build: broken" >&2; exit 3; }; ${COPY}`) });
    await mesh.run({ type: 'move-module', module: 'b', commit: broken, heardFrom: 'test' });
    const [failure] = await waitFor('b to fail', async () => {
      const failed = await events(mesh, 'build.failed');
      return failed.length > 0 && failed;
    });
    expect(failure?.data).toMatchObject({ module: 'b', commit: broken });
    expect((failure?.data as { output: string }).output).toContain('b cannot build: broken');
    // The reason says what the recipe said last, not only how it ended.
    expect((failure?.data as { reason: string }).reason).toBe('the recipe failed: exited with 3: b cannot build: broken');
    const submittedAfter = await events(mesh, 'build.submitted');
    expect(submittedAfter).toHaveLength(5);
    const result = await runMesh(['build', 'c', '--json'], { ...envOf(mesh), ...(await mesh.operatorCommands()) });
    expect(result.code).toBe(3);
    expect(JSON.parse(result.stdout).refused[0].why).toMatch(/stands on b/);
  });

  it('a comment-only commit: registered, zero upgrades, zero new declarations', async () => {
    const mesh = await openBuildMesh();
    const repo = newRepo(scratch, 'comment');
    const first = commitFiles(repo, { 'files/v': 'same', 'build.sh': '# build\nmkdir -p out && cp -r files/. out/\n' }, 'first');
    const appRepo = newRepo(scratch, 'comment-app');
    const appCommit = commitFiles(appRepo, { 'files/app': 'app' }, 'first');
    await mesh.run({ type: 'register-module', manifest: moduleOf('base', { url: `file://${repo}`, path: '.' }, 'sh build.sh') });
    await mesh.run({ type: 'register-module', manifest: moduleOf('app', { url: `file://${appRepo}`, path: '.' }, `${COPY} && cp "$MESH_BASE_BASE/v" out/base`, ['base']) });
    await mesh.run({ type: 'add-node', node: 'n1' });
    await assign(mesh, 'base', 'n1');
    await assign(mesh, 'app', 'n1');
    startBuilder(mesh, 'b1');
    await mesh.run({ type: 'move-module', module: 'base', commit: first, heardFrom: 'test' });
    await mesh.run({ type: 'move-module', module: 'app', commit: appCommit, heardFrom: 'test' });
    await waitFor('both built and declared', async () => (await mesh.declarationOf('n1'))?.assignments.every((a) => a.artifact !== null));
    const declaredBefore = await mesh.nodesHead();
    const before = await latestOf(mesh, 'base');

    const comment = commitFiles(repo, { 'build.sh': '# build the artifact (a comment changed)\nmkdir -p out && cp -r files/. out/\n' }, 'comment only');
    await mesh.run({ type: 'move-module', module: 'base', commit: comment, heardFrom: 'test' });
    await waitFor('the comment-only build registered', async () => (await latestOf(mesh, 'base'))?.commit === comment);
    const succeeded = (await events(mesh, 'build.succeeded')).map((e) => e.data as { module: string; upgrade: boolean });
    expect(succeeded.filter((s) => s.upgrade)).toHaveLength(2);
    expect(succeeded.filter((s) => s.module === 'base').map((s) => s.upgrade)).toEqual([true, false]);
    expect((await latestOf(mesh, 'base'))?.digest).toBe(before?.digest);
    // Nothing standing on it was rebuilt, and no declaration was published.
    expect((await events(mesh, 'build.submitted')).filter((e) => (e.data as { module: string }).module === 'app')).toHaveLength(1);
    expect(await mesh.nodesHead()).toBe(declaredBefore);
  });

  it('an edge to an artifact no registered version produced is kept, and resolves when its producer registers — also after a rebuild', async () => {
    const mesh = await openBuildMesh();
    const schemas = freshSchemas();
    const projector = new Projector({
      databaseUrl: testDatabaseUrl(),
      nc: mesh.nc,
      log: { stream: mesh.names.logStream, subjectPrefix: mesh.names.logPrefix, registry: meshEventRegistry() },
      projections: meshProjections().filter((p) => ['modules', 'builds', 'seats'].includes(p.name)),
      schemas,
      planIntervalMs: 200,
      settings: FAST,
    });
    await projector.start();
    projectors.push(projector);
    const repo = newRepo(scratch, 'unknown-base');
    const first = commitFiles(repo, { 'runtime/files/lib': 'the runtime', 'app/files/v': 'app' }, 'first');
    // An artifact nothing here has produced yet, put in the store by hand: the digest is what `app` names.
    const typedIn = join(scratch, 'typed-in');
    mkdirSync(typedIn, { recursive: true });
    writeFileSync(join(typedIn, 'lib'), 'the runtime');
    const store = await new Objm(mesh.nc).open(artifactBucketName(mesh.names));
    const runtimeDigest = await storeArtifact(store, typedIn, 'typed in');
    expect(runtimeDigest).toBe(await treeDigest(typedIn));
    const url = `file://${repo}`;
    await mesh.run({ type: 'register-module', manifest: moduleOf('app', { url, path: 'app' }, `${COPY} && cp "$MESH_BASE_SHA256_${runtimeDigest.slice(7).toUpperCase()}/lib" out/`, [runtimeDigest]) });
    startBuilder(mesh, 'b1');
    await mesh.run({ type: 'move-module', module: 'app', commit: first, heardFrom: 'test' });
    await waitFor('app built', () => latestOf(mesh, 'app'));

    const graph = async () => {
      const result = await runMesh(['graph', 'app', '--json'], { ...envOf(mesh), MESH_PROJECTOR_SCHEMA: schemas.control, MESH_READ_SCHEMA: schemas.read });
      expect(result.code).toBe(0);
      return JSON.parse(result.stdout) as { builtOn: { target: string; targetDigest: string; producers: string[] }[] };
    };
    expect((await graph()).builtOn).toEqual([{ source: 'app', target: runtimeDigest, targetDigest: runtimeDigest, producers: [] }]);

    // Its producer registers: a module whose build yields the very same tree.
    await mesh.run({ type: 'register-module', manifest: moduleOf('runtime', { url, path: 'runtime' }, COPY) });
    await mesh.run({ type: 'move-module', module: 'runtime', commit: first, heardFrom: 'test' });
    await waitFor('runtime built', () => latestOf(mesh, 'runtime'));
    expect((await latestOf(mesh, 'runtime'))?.digest).toBe(runtimeDigest);
    expect((await graph()).builtOn[0]?.producers).toEqual(['runtime']);
    expect((await events(mesh, 'build.submitted')).filter((e) => (e.data as { module: string }).module === 'app')).toHaveLength(1);

    const rebuilt = await runMesh(['projections', 'rebuild', 'builds', '--json'], { ...envOf(mesh), MESH_PROJECTOR_SCHEMA: schemas.control, MESH_READ_SCHEMA: schemas.read });
    expect(rebuilt.code).toBe(0);
    expect((await graph()).builtOn[0]?.producers).toEqual(['runtime']);
  });

  it('a builder killed mid-build: the next holder redoes the job, and one version is registered', async () => {
    const mesh = await openBuildMesh();
    const repo = newRepo(scratch, 'killed');
    const marks = join(scratch, 'killed-marks');
    mkdirSync(marks, { recursive: true });
    const first = commitFiles(repo, { 'files/v': 'slow' }, 'first');
    // The recipe says it started, then waits for the test's go-ahead.
    const recipe = `echo "$$" >> ${marks}/started; while [ ! -f ${marks}/go ]; do sleep 0.05; done; ${COPY}`;
    await mesh.run({ type: 'register-module', manifest: moduleOf('slow', { url: `file://${repo}`, path: '.' }, recipe) });
    const doomed = startBuilder(mesh, 'doomed');
    await mesh.run({ type: 'move-module', module: 'slow', commit: first, heardFrom: 'test' });
    const started = () => spawnSync('sh', ['-c', `cat ${marks}/started 2>/dev/null | wc -l`], { encoding: 'utf8' }).stdout.trim();
    await waitFor('the first builder to start the recipe', async () => started() === '1');
    stopBuilder(doomed);
    startBuilder(mesh, 'next');
    await waitFor('the next holder to start it again', async () => started() === '2', 30_000);
    writeFileSync(join(marks, 'go'), '');
    await waitFor('slow built', () => latestOf(mesh, 'slow'));
    const succeeded = await events(mesh, 'build.succeeded');
    expect(succeeded).toHaveLength(1);
    expect(await events(mesh, 'build.submitted')).toHaveLength(1);
  });
});

const envOf = (mesh: TestMesh): Record<string, string> => ({
  MESH_NATS_URL: testNatsUrl(),
  MESH_DATABASE_URL: testDatabaseUrl(),
  MESH_LOG_STREAM: mesh.names.logStream,
  MESH_LOG_SUBJECT_PREFIX: mesh.names.logPrefix,
  MESH_SUBJECT_PREFIX: mesh.names.prefix,
  MESH_NODES_STREAM: mesh.names.nodesStream,
  MESH_CONTROL_STREAM: mesh.names.controlStream,
});

describe('a version recorded under the record policy', () => {
  const logHead = async (mesh: TestMesh): Promise<number> => {
    let head = 0;
    for await (const event of mesh.log.read()) head = Math.max(head, event.seq);
    return head;
  };
  const artifactOn = async (mesh: TestMesh, node: string, module: string) => (await mesh.declarationOf(node))?.assignments.find((a) => a.module === module)?.artifact;

  it('is not rolled out until mesh module deploy rolls it out; refusals and a plan append nothing', async () => {
    const mesh = await openBuildMesh();
    const repo = newRepo(scratch, 'recorded');
    const first = commitFiles(repo, { 'files/v': 'one' }, 'first');
    await mesh.run({ type: 'register-module', manifest: moduleOf('app', { url: `file://${repo}`, path: '.' }, COPY) });
    await mesh.run({ type: 'add-node', node: 'n1' });
    await assign(mesh, 'app', 'n1');
    startBuilder(mesh, 'b1');
    await mesh.run({ type: 'move-module', module: 'app', commit: first, heardFrom: 'test' });
    const deployed = await waitFor('the first version rolled out to n1', () => artifactOn(mesh, 'n1', 'app'));

    await mesh.run({ type: 'set-rollout-policy', module: 'app', policy: 'record' });
    const second = commitFiles(repo, { 'files/v': 'two' }, 'second');
    await mesh.run({ type: 'move-module', module: 'app', commit: second, heardFrom: 'test' });
    const recorded = await waitFor('the second version recorded', async () => {
      const latest = await latestOf(mesh, 'app');
      return latest?.commit === second && latest;
    });
    expect(recorded.digest).not.toBe(deployed);
    expect(await artifactOn(mesh, 'n1', 'app')).toBe(deployed);

    const env = { ...envOf(mesh), ...(await mesh.operatorCommands()) };
    const deploy = (...args: string[]) => runMesh(['module', 'deploy', ...args, '--json'], env);
    const head = await logHead(mesh);
    const ghost = await deploy('ghost', recorded.digest);
    expect(ghost.code).toBe(5);
    expect(JSON.parse(ghost.stdout).refused[0]).toMatchObject({ what: 'ghost', why: 'no such module is registered' });
    const unrecorded = await deploy('app', `sha256:${'f'.repeat(12)}`);
    expect(unrecorded.code).toBe(3);
    expect(JSON.parse(unrecorded.stdout).refused[0].why).toBe(`sha256:${'f'.repeat(12)} is not a version the mesh built and recorded for app`);
    expect(JSON.parse(unrecorded.stdout).refused[0].remedy).toContain(recorded.digest);
    expect((await deploy('app', 'version-two')).code).toBe(2);
    const already = await deploy('app', deployed as string);
    expect(already.code).toBe(0);
    expect(JSON.parse(already.stdout).summary).toContain('nothing to deploy');
    const planned = await runMesh(['module', 'deploy', 'app', recorded.digest, '--plan'], env);
    expect(planned.code).toBe(0);
    expect(planned.stdout).toContain('module.version-deployed');
    expect(await logHead(mesh)).toBe(head);
    expect(await artifactOn(mesh, 'n1', 'app')).toBe(deployed);

    // As mesh graph prints it: sha256: and twelve digits.
    const rolled = await deploy('app', recorded.digest.slice(0, 19));
    expect(rolled.code).toBe(0);
    expect(JSON.parse(rolled.stdout).events).toEqual([expect.objectContaining({ type: 'module.version-deployed' })]);
    await waitFor('n1 declared the recorded version', async () => (await artifactOn(mesh, 'n1', 'app')) === recorded.digest);
    const [event] = await events(mesh, 'module.version-deployed');
    expect(event?.data).toEqual({ module: 'app', digest: recorded.digest, commit: second, buildId: recorded.buildId, replaced: deployed });
  });
});
