import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { metafileOf } from '../../scripts/build-cli.js';

// What each `mesh` run loads, read from esbuild's account of the build dist/ holds (dist/meta.json,
// written by scripts/build-cli.js; the global setup built it from these sources). `mesh --help`,
// `--version` and completion load the entry and what it imports statically: commander and the
// verbs' definitions, never a verb's implementation. A definition that imports one (or anything
// that pulls in zod, pg or NATS) fails here, naming the chain.

interface Metafile {
  inputs: Record<string, { imports: { path: string; kind: string; external?: boolean }[] }>;
  outputs: Record<string, { imports: { path: string; kind: string; external?: boolean }[]; inputs: Record<string, unknown>; entryPoint?: string }>;
}

const meta = JSON.parse(readFileSync(metafileOf(), 'utf8')) as Metafile;

/** Every output file a run of `start` loads before any `import()`: its static imports, followed. */
const staticOutputs = (start: string): Set<string> => {
  const seen = new Set<string>();
  const todo = [start];
  for (let file = todo.pop(); file !== undefined; file = todo.pop()) {
    if (seen.has(file)) continue;
    seen.add(file);
    for (const imported of meta.outputs[file]?.imports ?? []) if (imported.kind === 'import-statement' && !imported.external) todo.push(imported.path);
  }
  return seen;
};

/** The source files and packages those output files hold. */
const inputsOf = (outputs: Set<string>): string[] => [...outputs].flatMap((file) => Object.keys(meta.outputs[file]?.inputs ?? {}));

/** How `from` comes to import `to` statically, file by file (for the failure message). */
const chainTo = (from: string, to: string): string => {
  const previous = new Map<string, string | null>([[from, null]]);
  const queue = [from];
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
    if (file === to) {
      const chain: string[] = [];
      for (let at: string | null | undefined = file; at; at = previous.get(at)) chain.unshift(at);
      return chain.join(' → ');
    }
    for (const imported of meta.inputs[file]?.imports ?? []) {
      if (imported.kind === 'dynamic-import' || imported.external || previous.has(imported.path)) continue;
      previous.set(imported.path, file);
      queue.push(imported.path);
    }
  }
  return `${to} (not reached from ${from})`;
};

/** What the entry may hold besides src/cli/define/: the program, its output and errors, --version's two fields. */
const ENTRY_SOURCES = new Set([
  'src/cli/main.ts',
  'src/cli/program.ts',
  'src/cli/verbs.ts',
  'src/cli/output.ts',
  'src/cli/source-map.ts',
  'src/cli/version.ts',
  'src/cli/completion.ts',
  'src/errors.ts',
  'src/domain/refusal.ts',
  'src/config.ts',
  'src/adapters/nats/replicas.ts',
  'src/adapters/fold-version.ts',
  'bin/fold-version.js',
  'src/projections/runtime.ts',
  'src/projections/names.ts',
  'src/domain/builds/rollout-policies.ts',
  'src/domain/operators/command-window-bounds.ts',
]);

describe('what mesh loads before a verb runs', () => {
  const entry = Object.keys(meta.outputs).find((file) => meta.outputs[file]?.entryPoint === 'src/cli/main.ts') ?? 'dist/mesh.mjs';
  const loaded = inputsOf(staticOutputs(entry));

  it('is commander and the verbs\' definitions: no package but commander, no source outside the program', () => {
    const packages = [...new Set(loaded.filter((input) => input.startsWith('node_modules/')).map((input) => /^node_modules\/((@[^/]+\/)?[^/]+)/.exec(input)?.[1]))];
    expect(packages.sort()).toEqual(['@commander-js/extra-typings', 'commander']);
    const outside = loaded.filter((input) => !input.startsWith('node_modules/') && !input.startsWith('src/cli/define/') && !ENTRY_SOURCES.has(input));
    expect(outside.map((input) => chainTo('src/cli/main.ts', input))).toEqual([]);
  });

  it("has every verb's definition, and each verb's implementation in a file of its own, loaded by import()", () => {
    expect(loaded.filter((input) => input.startsWith('src/cli/define/')).length).toBeGreaterThanOrEqual(20);
    for (const implementation of ['src/cli/status.ts', 'src/cli/seats.ts', 'src/cli/node.ts', 'src/cli/controller.ts']) {
      expect(loaded).not.toContain(implementation);
      expect(Object.values(meta.outputs).some((output) => Object.keys(output.inputs).includes(implementation))).toBe(true);
    }
  });

  it('leaves --at\'s fold and a command\'s machinery out of a read of the present', () => {
    for (const read of ['src/cli/status.ts', 'src/cli/seats.ts', 'src/cli/node.ts']) {
      const output = Object.keys(meta.outputs).find((file) => meta.outputs[file]?.entryPoint === read);
      expect(output).toBeDefined();
      const inputs = inputsOf(staticOutputs(output ?? ''));
      for (const absent of ['src/cli/at-fold.ts', 'src/cli/mesh-session.ts', 'src/controller/fold-snapshots.ts', 'node_modules/pg-listen/index.js']) {
        expect(inputs.includes(absent) ? chainTo(read, absent) : absent).toBe(absent);
      }
    }
  });
});
