import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { emptyMeshState, foldedEventTypes } from './mesh/state.js';
import { meshEventRegistry } from './registry.js';

// The map of the mesh's state, kept true by the code: each slice owns its state, other code reads
// it through the slice's exported queries, and every event type has a home.

const SLICES = ['catalogue', 'seats', 'nodes', 'assignments', 'operators', 'builds', 'facts', 'declarations', 'secrets', 'routes', 'trust', 'answers'] as const;
const SRC = join(dirname(fileURLToPath(import.meta.url)), '..');

const sourcesUnder = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourcesUnder(path);
    return path.endsWith('.ts') && !path.endsWith('.test.ts') ? [path] : [];
  });

/** `state.seats.byId`: a reach into a slice's fields, where its queries should be asked. */
const REACH_INTO = new RegExp(`\\b(?:state|mesh\\(\\))\\.(${SLICES.join('|')})\\.([A-Za-z_]\\w*)`, 'g');

describe('the slices of the mesh state', () => {
  it('the composition holds only the log position, aggregate versions and command ids beside the slices', () => {
    expect(Object.keys(emptyMeshState()).sort()).toEqual([...SLICES, 'commands', 'seq', 'versions'].sort());
  });

  it('code outside a slice reads its state through the queries it exports, never its fields', () => {
    const reaches: string[] = [];
    for (const file of [...sourcesUnder(join(SRC, 'domain')), ...sourcesUnder(join(SRC, 'controller')), ...sourcesUnder(join(SRC, 'cli')), ...sourcesUnder(join(SRC, 'dev'))]) {
      const home = relative(join(SRC, 'domain'), file).split('/')[0];
      for (const match of readFileSync(file, 'utf8').matchAll(REACH_INTO)) {
        if (match[1] !== home) reaches.push(`${relative(SRC, file)}: ${match[0]}`);
      }
    }
    expect(reaches).toEqual([]);
  });

  it('every event type is folded by a slice, or is the log’s own (it moves only the position)', () => {
    const logOnly = ['mesh.initialised', 'log.voided', 'projection.stalled', 'fact.report-mismatch'];
    const folded = new Set(foldedEventTypes());
    const homeless = meshEventRegistry()
      .types()
      .filter((type) => !folded.has(type as never) && !logOnly.includes(type));
    expect(homeless).toEqual([]);
  });
});
