import { describe, expect, it } from '@jest/globals';
import { isValidCommit } from '../../src/adapters/eventlog/envelope-check.js';
import { commitSchema } from '../../src/domain/events/envelope.js';

// The hand-written envelope check is a fast path in front of zod: whatever it accepts, zod must
// accept too, and the ordinary commits the mesh writes must take it.

const envelope = (overrides: Record<string, unknown> = {}): Record<string, unknown> => ({
  id: 'e1',
  type: 'seat.defined',
  schemaVersion: 1,
  aggregate: 'seat.mesh-git',
  time: '2026-12-02T14:36:00.049Z',
  actor: 'operator:ada',
  commandId: 'c1',
  causationId: 'c1',
  correlationId: 'c1',
  data: { any: 'thing' },
  ...overrides,
});

const commit = (events: unknown[], extra: Record<string, unknown> = {}): unknown => ({ firstVersion: 1, events, ...extra });

const roundTrip = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

const withKey = (key: string, value: unknown): Record<string, unknown> => {
  const copy = envelope();
  copy[key] = value;
  return copy;
};

const without = (key: string): Record<string, unknown> => {
  const copy = envelope();
  delete copy[key];
  return copy;
};

const signedCommand = (overrides: Record<string, unknown> = {}): Record<string, unknown> => ({
  commandId: 'c1',
  operator: 'ada',
  command: { type: 'add-node', node: 'alpha' },
  time: '2026-12-02T14:36:00.049Z',
  signature: 'c2lnbmVk',
  ...overrides,
});

const valid: unknown[] = [
  commit([envelope()]),
  commit([envelope()], { command: signedCommand() }),
  commit([envelope()], { command: signedCommand({ purpose: 'carry-out' }) }),
  commit([envelope(), envelope({ id: 'e2', aggregate: 'assignment.alpha.gitea_2' })]),
  commit([envelope({ time: '2024-02-29T00:00:00Z' })]),
  commit([envelope({ time: '2026-12-31T23:59:59.999999+05:30' })]),
  commit([envelope({ time: '2026-04-30T12:00:00-03:00' })]),
  commit([envelope({ aggregate: 'Node.A-1' })]),
];

const invalid: unknown[] = [
  null,
  [],
  'commit',
  commit([]),
  { firstVersion: 0, events: [envelope()] },
  { firstVersion: 1.5, events: [envelope()] },
  { events: [envelope()] },
  { firstVersion: 1, events: {} },
  commit([envelope()], { extra: true }),
  commit([envelope()], { command: null }),
  commit([envelope()], { command: signedCommand({ extra: 1 }) }),
  commit([envelope()], { command: signedCommand({ command: [] }) }),
  commit([envelope()], { command: signedCommand({ command: 'add-node' }) }),
  ...['commandId', 'operator', 'signature'].flatMap((key) => [commit([envelope()], { command: signedCommand({ [key]: '' }) }), commit([envelope()], { command: signedCommand({ [key]: 7 }) })]),
  commit([envelope()], { command: signedCommand({ time: 7 }) }),
  ...['', 'carry', 7, null].map((purpose) => commit([envelope()], { command: signedCommand({ purpose }) })),
  commit([envelope({ extra: 1 })]),
  commit([without('actor')]),
  commit([without('data')]),
  ...['id', 'actor', 'commandId', 'causationId', 'correlationId'].flatMap((key) => [commit([withKey(key, '')]), commit([withKey(key, 7)])]),
  ...['Seat.defined', 'seat', 'seat..defined', 'seat.defined.', '.seat', 'seat.Defined', 7].map((type) => commit([envelope({ type })])),
  ...[0, -1, 1.5, '1', Number.MAX_SAFE_INTEGER + 2].map((schemaVersion) => commit([envelope({ schemaVersion })])),
  ...['seat', 'seat.', '.seat', 'seat..git', 'seat.-git', 'seat.git!', 'seat git.x', '', 5].map((aggregate) => commit([envelope({ aggregate })])),
  ...[
    '2026-02-29T00:00:00Z',
    '2026-04-31T00:00:00Z',
    '2026-13-01T00:00:00Z',
    '2026-12-00T00:00:00Z',
    '2026-12-02T24:00:00Z',
    '2026-12-02T14:36:00',
    '2026-12-02 14:36:00Z',
    '2026-12-02T14:60:00Z',
    '2026-12-02T14:36:00+25:00',
    'yesterday',
    0,
  ].map((time) => commit([envelope({ time })])),
];

// Every field missing, empty, of the wrong type, null or with a space, and edge cases of each
// check: whatever the hand check takes here, zod must take too (it may turn down more).
const edges: unknown[] = [
  ...Object.keys(envelope()).flatMap((key) => [without(key), withKey(key, ''), withKey(key, 7), withKey(key, null), withKey(key, 'a b')]),
  ...[
    '2028-02-29T00:00:00Z',
    '2026-12-02T14:36:00+01:00',
    '2026-12-02T14:36:00+0100',
    '2026-12-02T14:36:00.1234567890Z',
    '0000-01-01T00:00:00Z',
  ].map((time) => envelope({ time })),
  envelope({ type: 'seat.held-over' }),
  ...['seat.a b', 'seat._a'].map((aggregate) => envelope({ aggregate })),
  envelope({ schemaVersion: 2 ** 60 }),
].map((event) => commit([event]));
const signedEdges: unknown[] = Object.keys(signedCommand({ purpose: 'plan' })).flatMap((key) => {
  const missing = signedCommand({ purpose: 'plan' });
  delete missing[key];
  return [missing, signedCommand({ [key]: '' }), signedCommand({ [key]: 'plan' }), signedCommand({ [key]: 7 }), signedCommand({ [key]: null }), signedCommand({ [key]: {} }), signedCommand({ [key]: [] })].map((command) => commit([envelope()], { command }));
});

describe('the envelope check in front of zod', () => {
  it('takes every ordinary commit, as zod does', () => {
    for (const value of valid.map(roundTrip)) {
      expect(commitSchema.safeParse(value).success).toBe(true);
      expect(isValidCommit(value)).toBe(true);
    }
  });

  it('turns down whatever zod turns down', () => {
    for (const value of invalid.map(roundTrip)) {
      expect([isValidCommit(value), commitSchema.safeParse(value).success]).toEqual([false, false]);
    }
  });

  it('takes nothing zod turns down, at the edges of every check', () => {
    for (const value of [...edges, ...signedEdges].map(roundTrip)) {
      if (isValidCommit(value)) expect({ value, zod: commitSchema.safeParse(value).success }).toEqual({ value, zod: true });
    }
  });

  it('turns down a key inherited rather than the envelope\'s own', () => {
    const inherited = Object.create({ data: {} }) as Record<string, unknown>;
    Object.assign(inherited, without('data'));
    expect(isValidCommit(commit([inherited]))).toBe(false);
  });
});
