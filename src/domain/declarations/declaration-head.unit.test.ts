import { describe, expect, it } from '@jest/globals';
import { declarationHeadSchema } from './declaration.js';

// What a publisher and the overview read of a declaration in NODES: its head, checked as the whole
// schema checks it; the assignments are not theirs to read.

const head = { node: 'alpha', sequence: 3, digest: `sha256:${'a'.repeat(64)}`, derivedFromSeq: 120 };

describe("a declaration's head", () => {
  it('is read from a whole declaration, its assignments left out', () => {
    expect(declarationHeadSchema.parse({ ...head, assignments: [{ anything: 'unread' }] })).toEqual(head);
  });

  it('is refused when a field of the head is not what the declaration schema takes', () => {
    for (const bad of [{ sequence: 0 }, { sequence: 1.5 }, { digest: 'sha256:short' }, { derivedFromSeq: -1 }, { node: '' }]) {
      expect(declarationHeadSchema.safeParse({ ...head, ...bad, assignments: [] }).success).toBe(false);
    }
  });
});
