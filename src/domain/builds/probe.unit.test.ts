import { describe, expect, it } from '@jest/globals';
import { MeshFixture } from '../../../tests/helpers/given.js';
import { decideMeshCommand } from '../mesh/commands.js';
import { probeNote, probeRefusal, probeRequestOf, treePathOf, type ProbeRequest } from './probe.js';

// What the control plane asks a holder of the build seat before an operator's build, and what it
// makes of the answer.

const COMMIT = 'c'.repeat(40);

describe('the build seat probe', () => {
  it('asks about what the decision would submit: its source, commit and path; nothing when nothing is submitted', () => {
    const mesh = new MeshFixture();
    mesh.register({ name: 'api', source: { url: 'https://git.example/acme/shop', path: 'services/api' }, build: { recipe: 'make', output: 'out', on: [] } });
    mesh.run({ type: 'move-module', module: 'api', commit: COMMIT, heardFrom: 'operator' });
    const submit = { type: 'submit-build', module: 'api', buildId: 'b1', registerOnly: false, requestedBy: 'operator' } as const;
    expect(probeRequestOf(decideMeshCommand(submit, mesh.state))).toEqual({ source: { url: 'https://git.example/acme/shop' }, commit: COMMIT, path: 'services/api' });
    mesh.run(submit);
    // already being built: the decision appends nothing, so there is nothing to look at
    expect(probeRequestOf(decideMeshCommand({ ...submit, buildId: 'b2' }, mesh.state))).toBeUndefined();
  });

  it('names the folder inside the commit as git takes it; a path leaving the repository has none', () => {
    expect(['.', './', '', ' . '].map(treePathOf)).toEqual(['', '', '', '']);
    expect(treePathOf('api')).toBe('api');
    expect(treePathOf('./services//api/')).toBe('services/api');
    expect(treePathOf('a/../b')).toBe('b');
    expect([treePathOf('..'), treePathOf('../elsewhere'), treePathOf('/etc')]).toEqual([undefined, undefined, undefined]);
  });

  const request: ProbeRequest = { source: { seat: 'mesh-git', repository: 'acme/shop' }, commit: COMMIT, path: 'apii' };
  const looked = { url: 'file:///forge/acme/shop', commit: COMMIT, path: 'apii' };

  it('refuses only a folder the holder found missing, naming the module, the path, the commit, where it looked and the remedy', () => {
    const refusal = probeRefusal('api', request, { found: 'missing', why: "the commit's tree has nothing at apii", looked, builder: 'b1' }, 'main');
    expect(refusal?.message).toContain('building module api refused');
    expect(refusal?.problems).toEqual([
      {
        what: "api's source.path apii",
        why: `the source has no folder apii at commit ${COMMIT} (the commit's tree has nothing at apii; looked in file:///forge/acme/shop, ref main, for apii, asked b1): the build could not start, so nothing was submitted`,
        remedy: expect.stringContaining('correct source.path in api\'s manifest'),
      },
    ]);
    expect(refusal?.problems[0]?.remedy).toContain('mesh module register <manifest.json>');
    expect(probeRefusal('api', request, { found: 'folder', looked, builder: 'b1' })).toBeUndefined();
    expect(probeRefusal('api', request, { found: 'unchecked', why: `commit ${COMMIT} is not in file:///forge/acme/shop`, looked, builder: 'b1' })).toBeUndefined();
    expect(probeRefusal('api', request, { found: 'unanswered', why: 'none is on the bus' })).toBeUndefined();
  });

  it('says in the summary whether the source was checked, and who did not answer', () => {
    expect(probeNote(request, { found: 'folder', looked, builder: 'b1' })).toBe(`source checked: file:///forge/acme/shop has apii at ${COMMIT} (asked b1)`);
    expect(probeNote(request, { found: 'unanswered', why: 'none is on the bus' })).toBe(
      `the source could not be checked: no holder of mesh-build-machine answered (none is on the bus); the job waits in the queue until a builder takes it, and says then if apii is missing from acme/shop on mesh-git at ${COMMIT}`,
    );
    expect(probeNote(request, { found: 'unchecked', why: 'fetching took too long', looked: {}, builder: 'b1' })).toContain('the source could not be checked (b1: fetching took too long)');
  });
});
