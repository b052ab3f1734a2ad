import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { sourceMappedStack } from '../../src/cli/source-map.js';
import { projectRoot } from '../../src/config.js';
import { runMesh } from '../helpers/cli.js';

// One-shot verbs run from the bundle without its source map loaded; an internal error's stack is
// mapped back to the TypeScript sources when it is printed, from the map beside the bundle.

describe('an internal error printed by a one-shot verb', () => {
  it('names the TypeScript source, line and column of a frame in a file of the bundle', async () => {
    // The bundle and its maps, as mesh builds them when a source is newer; meshProgram is in
    // one of the files the bundle is split into (the entry, as it stands).
    expect((await runMesh(['--help'])).code).toBe(0);
    const dist = join(projectRoot, 'dist');
    const file = readdirSync(dist).find((name) => name.endsWith('.mjs') && /^var meshProgram = /m.test(readFileSync(join(dist, name), 'utf8')));
    expect(file).toBeDefined();
    const bundle = join(dist, file ?? '');
    const lines = readFileSync(bundle, 'utf8').split('\n');
    const line = lines.findIndex((text) => text.startsWith('var meshProgram = '));
    expect(line).toBeGreaterThan(0);
    const stack = `Error: boom\n    at meshProgram (${pathToFileURL(bundle).href}:${line + 1}:5)\n    at node:internal/modules/run_main:1:1`;
    const mapped = sourceMappedStack(stack);
    expect(mapped).toMatch(/at meshProgram \(src\/cli\/program\.ts:\d+:\d+\)/);
    expect(mapped).toContain('node:internal/modules/run_main:1:1');
  });

  it('leaves a stack as it is when no map lies beside its file', () => {
    const stack = 'Error: boom\n    at f (file:///nowhere/else.mjs:3:4)';
    expect(sourceMappedStack(stack)).toBe(stack);
  });
});
