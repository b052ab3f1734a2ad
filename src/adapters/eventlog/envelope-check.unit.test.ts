import { describe, expect, it } from '@jest/globals';
import { commitSchema } from '../../domain/events/envelope.js';
import { isValidCommit } from './envelope-check.js';

// The hand check may turn down what zod accepts (zod then decides), never accept what zod refuses.

const envelope = {
  id: 'e1',
  type: 'seat.held',
  schemaVersion: 1,
  aggregate: 'assignment.n1.agent',
  time: '2026-12-02T14:36:00.049Z',
  actor: 'operator:ada',
  commandId: 'c1',
  causationId: 'c1',
  correlationId: 'c1',
  data: { seat: 's' },
};
const commit = { firstVersion: 1, events: [envelope] };

const variants: unknown[] = [
  commit,
  { ...commit, extra: 1 },
  { firstVersion: 0, events: [envelope] },
  { firstVersion: 1.5, events: [envelope] },
  { firstVersion: 1, events: [] },
  { firstVersion: 1, events: {} },
  null,
  [],
  'x',
  ...Object.keys(envelope).flatMap((key) => {
    const { [key as keyof typeof envelope]: _dropped, ...without } = envelope;
    return [without, { ...envelope, [key]: '' }, { ...envelope, [key]: 7 }, { ...envelope, [key]: null }, { ...envelope, [key]: 'a b' }];
  }),
  { ...envelope, extra: true },
  ...['2026-02-29T00:00:00Z', '2028-02-29T00:00:00Z', '2026-04-31T00:00:00Z', '2026-12-02T24:00:00Z', '2026-12-02T14:36:00+01:00', '2026-12-02T14:36:00+0100', '2026-12-02T14:36:00', '2026-12-02 14:36:00Z', '2026-12-02T14:36:00.1234567890Z', '0000-01-01T00:00:00Z']
    .map((time) => ({ ...envelope, time })),
  ...['seat', 'Seat.held', 'seat..held', 'seat.held.', 'seat.held-over'].map((type) => ({ ...envelope, type })),
  ...['seat', 'seat.', 'seat.a..b', 'seat.a b', 'seat.-a', 'seat._a'].map((aggregate) => ({ ...envelope, aggregate })),
  { ...envelope, schemaVersion: 2 ** 60 },
  { ...envelope, data: undefined },
].map((v) => (v && typeof v === 'object' && 'id' in v ? { firstVersion: 1, events: [v] } : v));

describe('the hand check of a commit', () => {
  it('accepts a valid commit', () => {
    expect(isValidCommit(JSON.parse(JSON.stringify(commit)))).toBe(true);
  });

  it('accepts nothing zod refuses', () => {
    for (const variant of variants) {
      const raw = JSON.parse(JSON.stringify(variant) ?? 'null') as unknown;
      if (isValidCommit(raw)) expect({ variant, zod: commitSchema.safeParse(raw).success }).toEqual({ variant, zod: true });
    }
  });
});
