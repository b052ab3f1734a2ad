import type { Declaration } from '../../src/domain/declarations/declaration.js';
import type { Report } from '../../src/domain/reports/report.js';

/** What an agent reports after applying `declaration` in full: every resource applied, every module running. */
export const reportFor = (declaration: Declaration, overrides: Partial<Report> = {}): Report => ({
  node: declaration.node,
  sequence: declaration.sequence,
  digest: declaration.digest,
  at: new Date().toISOString(),
  resources: declaration.assignments.flatMap((a) => a.resources.map((r) => ({ key: r.key, module: r.module, kind: r.kind, outcome: 'applied' as const, reason: null, restarts: null }))),
  running: declaration.assignments.map((a) => ({ module: a.module, definitionVersion: a.definitionVersion, artifact: a.artifact })),
  refusal: null,
  ...overrides,
});
