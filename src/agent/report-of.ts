import type { Declaration } from '../domain/declarations/declaration.js';
import type { Report, ResourceOutcome } from '../domain/reports/report.js';

// What the node says after a pass: one outcome per resource the declaration sent, so the report
// adds up (sent = applied + held + refused + crash-looping), and what now runs.

export const reportOf = (node: string, declaration: Declaration, resources: ResourceOutcome[], at: Date): Report => {
  const outcomeOf = new Map(resources.map((r) => [r.key, r.outcome]));
  return {
    node,
    sequence: declaration.sequence,
    digest: declaration.digest,
    at: at.toISOString(),
    resources,
    running: declaration.assignments
      .filter((a) => a.resources.every((r) => outcomeOf.get(r.key) === 'applied'))
      .map((a) => ({ module: a.module, definitionVersion: a.definitionVersion, artifact: a.artifact })),
    refusal: null,
  };
};

/** A declaration refused as a whole: each of its resources refused with the same reason; what runs is unchanged. */
export const refusalReport = (
  node: string,
  refused: { sequence: number; digest: string; refusal: string; resources: Declaration['assignments'][number]['resources'] },
  running: Report['running'],
  at: Date,
): Report => ({
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
