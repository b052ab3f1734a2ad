import { describe, expect, it } from '@jest/globals';
import { basesNotHanded, lastLines, recipeProblem } from './recipe.js';
import { buildProblemsOf } from './standing.js';

describe('what a recipe needs before it starts', () => {
  it('finds a base the recipe reads that build.on does not hand it', () => {
    expect(basesNotHanded('docker build --build-arg BASE=$MESH_BASE_NODE_20 . && cp -r "${MESH_BASE_TOOLS}/bin" out', ['node-20'])).toEqual(['MESH_BASE_TOOLS']);
    expect(basesNotHanded('ls $MESH_BASES', [])).toEqual([]);
    expect(recipeProblem({ recipe: 'tar -C "$MESH_BASE_IMAGE" -c .', on: [] })).toMatch(/reads \$MESH_BASE_IMAGE, and build\.on names no base; there is no default base/);
    expect(recipeProblem({ recipe: '  ', on: [] })).toMatch(/no recipe/);
    expect(recipeProblem({ recipe: 'make', on: [] })).toBeUndefined();
  });

  it('keeps the last lines a failed recipe printed', () => {
    expect(lastLines('one\ntwo\n\nthree\nfour\nfive\nsix\n')).toBe('two | three | four | five | six');
  });
});

describe('a module whose build is not what its source says', () => {
  it('is a problem when its newest build failed, or its source moved with nothing built since; not while a build is under way', () => {
    const problems = buildProblemsOf([
      { module: 'failed', head: 'b'.repeat(40), built: 'a'.repeat(40), newest: { buildId: 'b1', status: 'failed', commit: 'b'.repeat(40), failure: 'the recipe failed: exited with 2: make: *** no rule' } },
      { module: 'moved', head: 'c'.repeat(40), built: 'a'.repeat(40) },
      { module: 'never', head: 'c'.repeat(40) },
      { module: 'building', head: 'c'.repeat(40), built: 'a'.repeat(40), newest: { buildId: 'b2', status: 'submitted', commit: 'c'.repeat(40) } },
      { module: 'current', head: 'a'.repeat(40), built: 'a'.repeat(40), newest: { buildId: 'b3', status: 'succeeded', commit: 'a'.repeat(40) } },
    ]);
    expect(problems).toEqual([
      expect.stringMatching(/^failed: its newest build b1 \(commit bbbbbbbbbbbb\) failed: the recipe failed: exited with 2: make: \*\*\* no rule; its newest version is from aaaaaaaaaaaa/),
      expect.stringMatching(/^moved: its source moved to cccccccccccc and no build of it has succeeded since/),
      expect.stringMatching(/^never: .*it has no version yet/),
    ]);
  });
});
