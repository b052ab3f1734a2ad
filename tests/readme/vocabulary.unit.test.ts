import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../../src/config.js';
import { resourceSchema } from '../../src/domain/declarations/declaration.js';

// Issue 20: docs/manifest.md lists the whole vocabulary a node applies, one example each, and each
// kind names the decision it comes from. Read against the kinds a declaration can carry, so a kind
// added to the declaration and not to the page fails here.

const kinds = resourceSchema.options.map((option) => option.shape.kind.value).sort();

describe('the vocabulary in docs/manifest.md', () => {
  const page = readFileSync(join(projectRoot, 'docs', 'manifest.md'), 'utf8');
  const table = page.slice(page.indexOf('## The vocabulary: what a node applies'));
  const rows = new Map(
    table
      .split('\n')
      .filter((line) => line.startsWith('| `'))
      .map((line) => line.split('|').map((cell) => cell.trim()))
      .map((cells) => [cells[1]?.match(/^`([a-z-]+)`/)?.[1] ?? '', { example: cells[3] ?? '', decision: cells[4] ?? '' }] as const),
  );

  it('has a row for every kind a declaration carries, and none it does not', () => {
    expect([...rows.keys()].sort()).toEqual(kinds);
  });

  it.each(kinds)('%s has an example and names the decision it comes from', (kind) => {
    const row = rows.get(kind);
    expect(row?.example).toMatch(/`.+`/);
    expect(row?.decision).toMatch(/ADR \d+|issue \d+/);
  });
});
