import type { Declaration } from '../domain/declarations/declaration.js';
import { clip, REASON_MAX, REPORT_MAX_BYTES } from '../domain/reports/bounds.js';
import type { Report, ResourceOutcome } from '../domain/reports/report.js';

// What the node says after a pass: one outcome per resource the declaration sent, so the report
// adds up (sent = applied + held + refused + crash-looping), and what now runs. Every reason is cut
// to what the controller reads (domain/reports/bounds.ts), so a report is never refused for its size.

/** The shortest a reason is cut to when a report of many long reasons would not fit otherwise. */
const REASON_FLOOR = 120;

/** `report` with its reasons cut until it fits the bounds the controller reads it with. */
export const fitted = (report: Report): Report => {
  const cut = (max: number): Report => ({
    ...report,
    resources: report.resources.map((r) => (r.reason === null ? r : { ...r, reason: clip(r.reason, max) })),
    refusal: report.refusal === null ? null : clip(report.refusal, max),
  });
  let max = REASON_MAX;
  let fit = cut(max);
  while (max > REASON_FLOOR && Buffer.byteLength(JSON.stringify(fit)) > REPORT_MAX_BYTES) {
    max = Math.max(REASON_FLOOR, Math.floor(max / 2));
    fit = cut(max);
  }
  return fit;
};

export const reportOf = (node: string, declaration: Declaration, resources: ResourceOutcome[], at: Date): Report => {
  const outcomeOf = new Map(resources.map((r) => [r.key, r.outcome]));
  return fitted({
    node,
    sequence: declaration.sequence,
    digest: declaration.digest,
    at: at.toISOString(),
    resources,
    running: declaration.assignments
      .filter((a) => a.resources.every((r) => outcomeOf.get(r.key) === 'applied'))
      .map((a) => ({ module: a.module, definitionVersion: a.definitionVersion, artifact: a.artifact })),
    refusal: null,
  });
};

/** A declaration refused as a whole: each of its resources refused with the same reason; what runs is unchanged. */
export const refusalReport = (
  node: string,
  refused: { sequence: number; digest: string; refusal: string; resources: Declaration['assignments'][number]['resources'] },
  running: Report['running'],
  at: Date,
): Report =>
  fitted({
    node,
    sequence: refused.sequence,
    digest: refused.digest,
    at: at.toISOString(),
    resources: refused.resources.map((r) => ({ key: r.key, module: r.module, kind: r.kind, outcome: 'refused', reason: refused.refusal, restarts: null })),
    running,
    refusal: refused.refusal,
  });

/**
 * Whether a report says something new. The time and the running restart count are left out: a
 * crash loop is news when it starts and when it ends, not at every restart.
 */
export const sameReport = (a: Report | undefined, b: Report): boolean => {
  if (!a) return false;
  const strip = (r: Report) => JSON.stringify({ ...r, at: undefined, resources: r.resources.map((o) => ({ ...o, restarts: undefined })) });
  return strip(a) === strip(b);
};
