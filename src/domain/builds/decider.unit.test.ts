import { describe, expect, it } from '@jest/globals';
import { MeshFixture, eventOf } from '../../../tests/helpers/given.js';
import { composeDeclaration } from '../declarations/compose.js';
import type { MeshEvent } from '../registry.js';
import type { MeshCommand } from '../mesh/commands.js';
import { deployVersionSchema, graphInputOf } from './decider.js';
import { assessGraph, reachedBy } from './graph.js';
import { buildProblemsOf, buildStandingsOf } from './standing.js';
import { registeredModules } from '../catalogue/state.js';

// Given a mesh / when a source moves, a build is submitted or recorded / then these events.

const digest = (n: number): string => `sha256:${n.toString(16).padStart(64, '0')}`;
const commit = (n: number): string => n.toString(16).padStart(40, 'c');

const built = (name: string, on: string[] = [], repository = `acme/${name}`, ref = 'main'): Record<string, unknown> => ({
  name,
  source: { url: `https://git.example/${repository}`, ref },
  resources: { containers: [{ name: 'app', image: { built: true } }] },
  build: { recipe: 'make', output: 'out', on },
});

let builds = 0;
const submit = (mesh: MeshFixture, module: string, registerOnly = false): MeshEvent[] =>
  mesh.run({ type: 'submit-build', module, buildId: `b${++builds}`, registerOnly, requestedBy: 'coordinator' });

/** Submits a build of `module` and records it as built into `artifact`, with what it was handed. */
const build = (mesh: MeshFixture, module: string, artifact: string): MeshEvent[] => {
  const [submitted] = submit(mesh, module);
  const { data } = eventOf(submitted, 'build.submitted');
  return mesh.run({ type: 'record-build', buildId: data.buildId, module, commit: data.commit, outcome: { kind: 'built', digest: artifact, bases: data.bases } });
};

const statusOf = (mesh: MeshFixture): Record<string, string> =>
  Object.fromEntries([...assessGraph(graphInputOf(mesh.state)).values()].map((a) => [a.module, a.status]));

const moved = (mesh: MeshFixture, module: string, n: number): MeshEvent[] => mesh.run({ type: 'move-module', module, commit: commit(n), heardFrom: 'operator' });

describe('a change becomes work', () => {
  it('a moved branch marks every module built from that repository and branch, and nothing else', () => {
    const mesh = new MeshFixture();
    mesh.register(built('api', [], 'acme/shop'));
    mesh.register(built('web', [], 'acme/shop'));
    mesh.register(built('docs', [], 'acme/shop', 'docs'));
    const events = mesh.run({ type: 'move-source', source: { url: 'https://git.example/acme/shop' }, ref: 'main', commit: commit(1), heardFrom: 'test' });
    expect(events).toEqual([{ type: 'source.moved', data: { source: { url: 'https://git.example/acme/shop' }, ref: 'main', commit: commit(1), heardFrom: 'test' } }]);
    expect(statusOf(mesh)).toEqual({ api: 'stale', web: 'stale', docs: 'blocked' });
  });

  it('several merges in a row: the last one wins and the build is of its commit', () => {
    const mesh = new MeshFixture();
    mesh.register(built('api'));
    moved(mesh, 'api', 1);
    moved(mesh, 'api', 2);
    const [submitted] = submit(mesh, 'api');
    expect(submitted?.data).toMatchObject({ module: 'api', commit: commit(2), bases: [] });
  });

  it('a module being built is not submitted twice', () => {
    const mesh = new MeshFixture();
    mesh.register(built('api'));
    moved(mesh, 'api', 1);
    expect(submit(mesh, 'api')).toHaveLength(1);
    expect(submit(mesh, 'api')).toEqual([]);
  });

  it('a source on mesh-git is refused while mesh-git is unheld, saying why; an external one carries on', () => {
    const mesh = new MeshFixture();
    mesh.register({ ...built('forged'), source: { seat: 'mesh-git', repository: 'mesh/forged', ref: 'main' } });
    mesh.register(built('external'));
    moved(mesh, 'forged', 1);
    moved(mesh, 'external', 1);
    const [problem] = mesh.refusal({ type: 'submit-build', module: 'forged', buildId: 'x', registerOnly: false, requestedBy: 'operator' });
    expect(problem?.why).toMatch(/mesh-git is unheld/);
    expect(submit(mesh, 'external')).toHaveLength(1);
  });

  it('a build names the bases it is handed: each base module’s newest artifact, or a digest as written', () => {
    const mesh = new MeshFixture();
    mesh.register(built('runtime'));
    mesh.register(built('app', ['runtime', digest(9)]));
    moved(mesh, 'runtime', 1);
    build(mesh, 'runtime', digest(1));
    moved(mesh, 'app', 2);
    const [submitted] = submit(mesh, 'app');
    expect(eventOf(submitted, 'build.submitted').data.bases).toEqual([
      { name: 'runtime', digest: digest(1) },
      { name: digest(9), digest: digest(9) },
    ]);
  });
});

describe('the graph', () => {
  const diamond = (): MeshFixture => {
    const mesh = new MeshFixture();
    mesh.register(built('b'));
    mesh.register(built('c', ['b']));
    mesh.register(built('d', ['b']));
    mesh.register(built('e', ['c', 'd']));
    for (const [i, name] of ['b', 'c', 'd', 'e'].entries()) moved(mesh, name, i + 1);
    build(mesh, 'b', digest(1));
    build(mesh, 'c', digest(2));
    build(mesh, 'd', digest(3));
    build(mesh, 'e', digest(4));
    return mesh;
  };

  it('in B → {C, D} → E, E waits for both and is built once, after them', () => {
    const mesh = diamond();
    expect(statusOf(mesh)).toEqual({ b: 'current', c: 'current', d: 'current', e: 'current' });
    moved(mesh, 'b', 10);
    expect(statusOf(mesh)).toEqual({ b: 'stale', c: 'waiting', d: 'waiting', e: 'waiting' });
    build(mesh, 'b', digest(11));
    expect(statusOf(mesh)).toEqual({ b: 'current', c: 'stale', d: 'stale', e: 'waiting' });
    build(mesh, 'c', digest(12));
    expect(statusOf(mesh)).toMatchObject({ c: 'current', d: 'stale', e: 'waiting' });
    expect(submit(mesh, 'e')).toEqual([]);
    build(mesh, 'd', digest(13));
    expect(statusOf(mesh)).toMatchObject({ e: 'stale' });
    const [submitted] = submit(mesh, 'e');
    expect(eventOf(submitted, 'build.submitted').data.bases).toEqual([
      { name: 'c', digest: digest(12) },
      { name: 'd', digest: digest(13) },
    ]);
  });

  it('a failed base is one failure: its dependents wait on it and nothing is submitted for them', () => {
    const mesh = diamond();
    moved(mesh, 'b', 10);
    const [submitted] = submit(mesh, 'b');
    const buildId = eventOf(submitted, 'build.submitted').data.buildId;
    mesh.run({ type: 'record-build', buildId, module: 'b', commit: commit(10), outcome: { kind: 'failed', reason: 'recipe exited with 2', output: 'make: *** [all] Error 2' } });
    expect(statusOf(mesh)).toEqual({ b: 'failed', c: 'waiting', d: 'waiting', e: 'waiting' });
    const e = assessGraph(graphInputOf(mesh.state)).get('e');
    expect(e).toMatchObject({ status: 'waiting', on: ['c', 'd'], roots: ['b failed: recipe exited with 2'] });
    expect(submit(mesh, 'b')).toEqual([]);
    for (const name of ['c', 'd']) expect(mesh.refusal({ type: 'submit-build', module: name, buildId: 'x', registerOnly: false, requestedBy: 'operator' })[0]?.why).toMatch(/stands on b/);
  });

  it('a byte-identical rebuild is registered and is not an upgrade; nothing standing on it is stale', () => {
    const mesh = diamond();
    moved(mesh, 'b', 20);
    const [event] = build(mesh, 'b', digest(1));
    expect(event?.data).toMatchObject({ upgrade: false, rollOut: false, commit: commit(20) });
    expect(statusOf(mesh)).toEqual({ b: 'current', c: 'current', d: 'current', e: 'current' });
    expect(mesh.state.builds.latest.get('b')?.commit).toBe(commit(20));
  });

  it('what a change reaches follows the bases each newest version was handed', () => {
    const mesh = diamond();
    expect(reachedBy(graphInputOf(mesh.state), 'b')).toEqual(['c', 'd', 'e']);
    expect(reachedBy(graphInputOf(mesh.state), 'c')).toEqual(['e']);
    expect(reachedBy(graphInputOf(mesh.state), 'e')).toEqual([]);
  });
});

describe('rolling out', () => {
  const running = (): MeshFixture => {
    const mesh = new MeshFixture().node('n1');
    mesh.register(built('app'));
    mesh.assign('app', 'n1');
    moved(mesh, 'app', 1);
    return mesh;
  };
  const artifactOn = (mesh: MeshFixture): string | null | undefined => {
    const composed = composeDeclaration(mesh.state, 'n1');
    return composed.ok ? composed.declaration.assignments[0]?.artifact : undefined;
  };

  it('roll-out: the declaration of the nodes running the module carries the new artifact', () => {
    const mesh = running();
    expect(artifactOn(mesh)).toBeNull();
    build(mesh, 'app', digest(1));
    expect(artifactOn(mesh)).toBe(digest(1));
    const composed = composeDeclaration(mesh.state, 'n1');
    expect(composed.ok && composed.declaration.assignments[0]?.resources.find((r) => r.kind === 'container')).toMatchObject({ image: `artifact-store://app@${digest(1)}` });
  });

  it('record: the version is registered and the nodes keep what they run', () => {
    const mesh = running();
    build(mesh, 'app', digest(1));
    mesh.run({ type: 'set-rollout-policy', module: 'app', policy: 'record' });
    moved(mesh, 'app', 2);
    const [event] = build(mesh, 'app', digest(2));
    expect(event?.data).toMatchObject({ upgrade: true, rollOut: false });
    expect(mesh.state.builds.latest.get('app')?.digest).toBe(digest(2));
    expect(artifactOn(mesh)).toBe(digest(1));
  });

  describe('deploying a recorded version (mesh module deploy)', () => {
    const first = `sha256:a1${'0'.repeat(62)}`;
    const second = `sha256:b2${'0'.repeat(62)}`;
    /** app deployed at `first`, then `second` built under `record` and not deployed. */
    const recorded = (): MeshFixture => {
      const mesh = running();
      build(mesh, 'app', first);
      mesh.run({ type: 'set-rollout-policy', module: 'app', policy: 'record' });
      moved(mesh, 'app', 2);
      build(mesh, 'app', second);
      return mesh;
    };

    it('rolls the recorded version out, named by its digest or a unique prefix, and the declaration carries it', () => {
      const mesh = recorded();
      expect(artifactOn(mesh)).toBe(first);
      const buildId = mesh.state.builds.latest.get('app')?.buildId;
      const [event] = mesh.run({ type: 'deploy-version', module: 'app', version: 'sha256:b2000' });
      expect(event).toEqual({ type: 'module.version-deployed', data: { module: 'app', digest: second, commit: commit(2), buildId, replaced: first } });
      expect(artifactOn(mesh)).toBe(second);
      expect(mesh.state.builds.policies.get('app')).toBe('record');
      // The version it replaced is neither the newest nor the deployed one: it has left the fold, as a roll-out's would.
      expect(mesh.refusal({ type: 'deploy-version', module: 'app', version: 'a1000' })).toEqual([expect.objectContaining({ why: 'a1000 is not a version the mesh built and recorded for app' })]);
      expect(mesh.state.builds.versions.has(`app@${first}`)).toBe(false);
    });

    it('the deployed version is nothing to do and appends nothing, named without `sha256:` too', () => {
      const mesh = recorded();
      expect(mesh.run({ type: 'deploy-version', module: 'app', version: first })).toEqual([]);
      expect(mesh.run({ type: 'deploy-version', module: 'app', version: 'a100' })).toEqual([]);
      expect(artifactOn(mesh)).toBe(first);
    });

    it('is refused for an unknown module, a version not recorded for it (listing the recorded ones), or an ambiguous prefix', () => {
      const mesh = recorded();
      const before = mesh.state.builds.deployed.get('app');
      expect(mesh.refusal({ type: 'deploy-version', module: 'ghost', version: first })).toEqual([expect.objectContaining({ what: 'ghost', why: 'no such module is registered', missing: 'module' })]);
      const [unknown] = mesh.refusal({ type: 'deploy-version', module: 'app', version: 'sha256:c3c3' });
      expect(unknown?.why).toBe('sha256:c3c3 is not a version the mesh built and recorded for app');
      expect(unknown?.remedy).toContain(first);
      expect(unknown?.remedy).toContain(second);
      for (const malformed of ['sha256:', 'v2', 'sha256:a1', 'SHA256:A100']) expect(deployVersionSchema.safeParse({ type: 'deploy-version', module: 'app', version: malformed }).success).toBe(false);
      const twins = running();
      build(twins, 'app', `sha256:abcd1${'0'.repeat(59)}`);
      twins.run({ type: 'set-rollout-policy', module: 'app', policy: 'record' });
      moved(twins, 'app', 2);
      build(twins, 'app', `sha256:abcd2${'0'.repeat(59)}`);
      expect(twins.refusal({ type: 'deploy-version', module: 'app', version: 'abcd' })).toEqual([expect.objectContaining({ why: 'abcd is the start of more than one of its versions' })]);
      expect(mesh.state.builds.deployed.get('app')).toBe(before);
    });

    it('a version older than the module\'s newest and its deployed one has left the fold: refused, naming the two it keeps', () => {
      const mesh = recorded();
      moved(mesh, 'app', 3);
      const third = `sha256:c3${'0'.repeat(62)}`;
      build(mesh, 'app', third);
      const [gone] = mesh.refusal({ type: 'deploy-version', module: 'app', version: second });
      expect(gone?.why).toContain('is not a version the mesh built and recorded for app');
      expect(gone?.remedy).toBe(`deploy one of its recorded versions: ${third} (build ${mesh.state.builds.latest.get('app')?.buildId}, commit ${commit(3).slice(0, 12)}); ${first} (build ${mesh.state.builds.versions.get(`app@${first}`)?.buildId}, commit ${commit(1).slice(0, 12)})`);
    });
  });

  it('--register-only records without deploying, whatever the policy', () => {
    const mesh = running();
    const [submitted] = submit(mesh, 'app', true);
    const buildId = eventOf(submitted, 'build.submitted').data.buildId;
    const [event] = mesh.run({ type: 'record-build', buildId, module: 'app', commit: commit(1), outcome: { kind: 'built', digest: digest(5), bases: [] } });
    expect(event?.data).toMatchObject({ upgrade: true, rollOut: false });
    expect(artifactOn(mesh)).toBeNull();
  });

  it('an outcome recorded twice is recorded once', () => {
    const mesh = running();
    const [submitted] = submit(mesh, 'app');
    const buildId = eventOf(submitted, 'build.submitted').data.buildId;
    const record: MeshCommand = { type: 'record-build', buildId, module: 'app', commit: commit(1), outcome: { kind: 'built', digest: digest(5), bases: [] } };
    expect(mesh.run(record)).toHaveLength(1);
    expect(mesh.run(record)).toEqual([]);
  });
});

describe('keeping the version a module runs', () => {
  const problems = (mesh: MeshFixture): string[] => buildProblemsOf(buildStandingsOf(registeredModules(mesh.state.catalogue), mesh.state.builds));
  const fail = (mesh: MeshFixture, module: string): string => {
    const [submitted] = submit(mesh, module);
    const { buildId, commit: at } = eventOf(submitted, 'build.submitted').data;
    mesh.run({ type: 'record-build', buildId, module, commit: at, outcome: { kind: 'failed', reason: 'exited with 2', output: '' } });
    return buildId;
  };

  it('clears a failed build and a moved source from the problems, until the source moves or a build fails again', () => {
    const mesh = new MeshFixture();
    mesh.register(built('app'));
    moved(mesh, 'app', 1);
    build(mesh, 'app', digest(1));
    expect(problems(mesh)).toEqual([]);
    moved(mesh, 'app', 2);
    const failed = fail(mesh, 'app');
    expect(problems(mesh)).toEqual([expect.stringContaining(`its newest build ${failed}`)]);

    const [kept] = mesh.run({ type: 'keep-version', module: 'app', reason: 'v2 waits for the new base' });
    expect(kept).toEqual({ type: 'module.version-kept', data: { module: 'app', head: commit(2), failedBuild: failed, reason: 'v2 waits for the new base' } });
    expect(problems(mesh)).toEqual([]);

    moved(mesh, 'app', 3);
    expect(problems(mesh)).toEqual([expect.stringContaining('its source moved to')]);
    mesh.run({ type: 'keep-version', module: 'app', reason: 'still waiting' });
    expect(problems(mesh)).toEqual([]);
    const again = fail(mesh, 'app');
    expect(problems(mesh)).toEqual([expect.stringContaining(`its newest build ${again}`)]);
  });

  it('is refused when there is nothing to keep, without a reason, or for a module the mesh does not build', () => {
    const mesh = new MeshFixture();
    mesh.register(built('app'));
    mesh.register({ name: 'plain', resources: { processes: [{ name: 'p', run: ['p'] }] } });
    expect(mesh.refusal({ type: 'keep-version', module: 'app', reason: 'why not' })).toEqual([expect.objectContaining({ why: expect.stringContaining('already run what its source says') })]);
    moved(mesh, 'app', 1);
    expect(mesh.refusal({ type: 'keep-version', module: 'app', reason: '  ' })).toEqual([expect.objectContaining({ what: '--reason' })]);
    expect(mesh.refusal({ type: 'keep-version', module: 'plain', reason: 'x' })).toEqual([expect.objectContaining({ why: expect.stringContaining('not built by the mesh') })]);
    expect(mesh.refusal({ type: 'keep-version', module: 'ghost', reason: 'x' })).toEqual([expect.objectContaining({ why: 'no such module is registered' })]);
  });
});

describe('the fold keeps the builds and versions the rules read, not every one ever', () => {
  it('after many builds: the unfinished, each module’s newest, and its latest and deployed versions', () => {
    const mesh = new MeshFixture();
    mesh.register(built('app'));
    mesh.register(built('lib'));
    const first: string[] = [];
    for (let n = 1; n <= 30; n++) {
      moved(mesh, 'app', n);
      const [submitted] = submit(mesh, 'app');
      const { data } = eventOf(submitted, 'build.submitted');
      first.push(data.buildId);
      mesh.run({ type: 'record-build', buildId: data.buildId, module: 'app', commit: data.commit, outcome: n % 3 === 0 ? { kind: 'failed', reason: 'tests', output: '' } : { kind: 'built', digest: digest(n), bases: data.bases } });
      if (n === 10) mesh.run({ type: 'set-rollout-policy', module: 'app', policy: 'record' });
    }
    moved(mesh, 'lib', 1);
    const [waiting] = submit(mesh, 'lib');
    const builds = mesh.state.builds;
    expect([...builds.builds.keys()]).toEqual([first.at(-1), eventOf(waiting, 'build.submitted').data.buildId]);
    // Deployed at build 10 (record from then on); the latest is build 29's.
    expect(builds.deployed.get('app')).toBe(digest(10));
    expect(builds.latest.get('app')?.digest).toBe(digest(29));
    expect([...builds.versions.keys()].sort()).toEqual([`app@${digest(10)}`, `app@${digest(29)}`]);
    // The newest build failed: the standing says so, as it did when every build was kept.
    expect(buildStandingsOf(registeredModules(mesh.state.catalogue), builds).find((s) => s.module === 'app')?.newest).toMatchObject({ buildId: first.at(-1), status: 'failed' });
  });

  it('an outcome for a build that finished before its module’s newest is refused, saying so', () => {
    const mesh = new MeshFixture();
    mesh.register(built('app'));
    moved(mesh, 'app', 1);
    const [old] = build(mesh, 'app', digest(1));
    moved(mesh, 'app', 2);
    build(mesh, 'app', digest(2));
    const { buildId } = eventOf(old, 'build.succeeded').data;
    const [problem] = mesh.refusal({ type: 'record-build', buildId, module: 'app', commit: commit(1), outcome: { kind: 'built', digest: digest(1), bases: [] } });
    expect(problem?.why).toBe(`no build ${buildId} of app is waiting for its outcome: it was never submitted, or it finished before app's newest build`);
  });
});
