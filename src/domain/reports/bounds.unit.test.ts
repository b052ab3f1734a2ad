import { describe, expect, it } from '@jest/globals';
import { refusalReport, reportOf } from '../../agent/report-of.js';
import type { Declaration } from '../declarations/declaration.js';
import { CAPABILITY_KINDS } from '../declarations/capabilities.js';
import { CAPABILITIES_MAX, oversized, REASON_MAX, REPORT_MAX_BYTES, REPORT_RESOURCES_MAX } from './bounds.js';
import { heartbeatSchema, reportSchema, type Report } from './report.js';

const DIGEST = `sha256:${'1'.repeat(64)}`;

const declaration = (resources: number): Declaration => ({
  node: 'lab1',
  sequence: 4,
  digest: DIGEST,
  derivedFromSeq: 10,
  assignments: [
    {
      module: 'echo',
      definitionVersion: 1,
      artifact: null,
      seats: [],
      resources: Array.from({ length: resources }, (_, i) => ({ key: `echo/r${i}`, module: 'echo', kind: 'directory' as const, path: `/srv/echo/${i}`, owner: null, mode: '0755' })),
    },
  ],
});

const report = (overrides: Partial<Report> = {}): Report => ({
  node: 'lab1',
  sequence: 4,
  digest: DIGEST,
  at: '2026-01-01T00:00:00.000Z',
  resources: [{ key: 'echo/r0', module: 'echo', kind: 'directory', outcome: 'refused', reason: 'no such user', restarts: null }],
  running: [],
  refusal: null,
  ...overrides,
});

describe('what a node says is bounded where it enters', () => {
  it('reads a report within bounds, and refuses each field out of them, naming it', () => {
    expect(reportSchema.safeParse(report()).success).toBe(true);
    const refusedFor = (bad: unknown) => {
      const read = reportSchema.safeParse(bad);
      return read.success ? 'read' : read.error.issues.map((i) => i.path.join('.')).join(',');
    };
    expect(refusedFor(report({ resources: [{ key: 'echo/r0', module: 'echo', kind: 'directory', outcome: 'refused', reason: 'x'.repeat(REASON_MAX + 1), restarts: null }] }))).toBe('resources.0.reason');
    expect(refusedFor(report({ refusal: 'x'.repeat(REASON_MAX + 1) }))).toBe('refusal');
    expect(refusedFor(report({ resources: Array.from({ length: REPORT_RESOURCES_MAX + 1 }, (_, i) => ({ key: `echo/r${i}`, module: 'echo', kind: 'directory', outcome: 'applied' as const, reason: null, restarts: null })) }))).toBe('resources');
    expect(refusedFor(report({ node: 'n'.repeat(64) }))).toBe('node');
    expect(refusedFor(report({ at: 'yesterday' }))).toBe('at');
    expect(refusedFor(report({ digest: 'x'.repeat(81) }))).toBe('digest');
    expect(refusedFor(report({ running: [{ module: 'echo', definitionVersion: 1, artifact: 'a'.repeat(513) }] }))).toBe('running.0.artifact');
    expect(refusedFor({ ...report(), extra: 'x' })).toBe('');
    expect(oversized('report', REPORT_MAX_BYTES + 1)).toContain(`at most ${REPORT_MAX_BYTES}`);
    expect(oversized('report', REPORT_MAX_BYTES)).toBeUndefined();
  });

  it('reads capabilities of a closed grammar, a few of them; a field it does not know is no reason to refuse a heartbeat', () => {
    expect(heartbeatSchema.safeParse({ node: 'lab1', at: '2026-01-01T00:00:00Z', sequence: 3, digest: DIGEST, capabilities: [...CAPABILITY_KINDS] }).success).toBe(true);
    expect(heartbeatSchema.safeParse({ node: 'lab1', capabilities: Array.from({ length: CAPABILITIES_MAX + 1 }, (_, i) => `kind-${i}`) }).success).toBe(false);
    for (const bad of ['Region', 'x'.repeat(33), '../etc', 'with space', '', '1st']) expect(heartbeatSchema.safeParse({ node: 'lab1', capabilities: [bad] }).success).toBe(false);
    expect(oversized('heartbeat', 4097)).toBe('a heartbeat of 4097 bytes: at most 4096 are read');
  });

  it("cuts the agent's reasons to fit, so the real agent's report is never refused for its size", () => {
    const long = 'e'.repeat(50_000);
    const d = declaration(REPORT_RESOURCES_MAX);
    const outcomes = d.assignments[0]?.resources.map((r) => ({ key: r.key, module: r.module, kind: r.kind, outcome: 'refused' as const, reason: long, restarts: null })) ?? [];
    const made = reportOf('lab1', d, outcomes, new Date());
    expect(reportSchema.safeParse(made).success).toBe(true);
    expect(Buffer.byteLength(JSON.stringify(made))).toBeLessThanOrEqual(REPORT_MAX_BYTES);
    expect(made.resources[0]?.reason?.endsWith('…')).toBe(true);

    const refused = refusalReport('lab1', { sequence: 4, digest: DIGEST, refusal: long, resources: d.assignments[0]?.resources ?? [] }, [], new Date());
    expect(reportSchema.safeParse(refused).success).toBe(true);
    expect(Buffer.byteLength(JSON.stringify(refused))).toBeLessThanOrEqual(REPORT_MAX_BYTES);
    // A short reason is said exactly as it was.
    expect(reportOf('lab1', declaration(1), [{ key: 'echo/r0', module: 'echo', kind: 'directory', outcome: 'held', reason: 'waiting for echo/r1', restarts: null }], new Date()).resources[0]?.reason).toBe('waiting for echo/r1');
  });
});
