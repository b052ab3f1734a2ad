import type { Declaration } from '../declarations/declaration.js';
import type { MeshEvent } from '../registry.js';
import type { MeshState } from '../mesh/state.js';
import type { Report } from '../reports/report.js';
import { runningOn, statedCrashLoop, statedRefusal, statedRunning } from './state.js';
import { FactApplied, FactCrashLooping, FactRefused, FactReportMismatch, FactStopped, type RunningVersion } from './events.js';

// From one report about the outstanding declaration to the facts it changes (ADR 0134: stated on
// change, not per pass). The state says what has been stated already, so two identical reports
// make one fact, and a controller re-reading its reports states nothing twice.

const sameVersion = (a: RunningVersion | undefined, b: RunningVersion): boolean => a?.definitionVersion === b.definitionVersion && a.artifact === b.artifact;

export const deriveFacts = (state: MeshState, declaration: Declaration, report: Report): MeshEvent[] => {
  const node = report.node;
  const facts: MeshEvent[] = [];
  const outcomes = new Map(report.resources.map((r) => [r.key, r]));
  const sent = declaration.assignments.flatMap((a) => a.resources.map((r) => r.key));
  const missing = sent.filter((key) => !outcomes.has(key));
  const unexpected = report.resources.map((r) => r.key).filter((key) => !sent.includes(key));
  if (missing.length > 0 || unexpected.length > 0) {
    facts.push({ type: FactReportMismatch.type, data: { node, declarationSequence: declaration.sequence, sent: sent.length, answered: report.resources.length, missing, unexpected } });
  }

  for (const assignment of declaration.assignments) {
    const version = { definitionVersion: assignment.definitionVersion, artifact: assignment.artifact };
    const where = { node, module: assignment.module, declarationSequence: declaration.sequence };
    for (const resource of assignment.resources) {
      const outcome = outcomes.get(resource.key);
      if (outcome?.outcome === 'refused') {
        const reason = outcome.reason ?? 'refused without a reason';
        const stated = statedRefusal(state.facts, node, assignment.module, resource.key);
        if (stated?.reason !== reason || stated.definitionVersion !== version.definitionVersion || stated.artifact !== version.artifact) {
          facts.push({ type: FactRefused.type, data: { ...where, version, resource: resource.key, kind: resource.kind, reason } });
        }
      } else if (outcome?.outcome === 'crash-looping') {
        const stated = statedCrashLoop(state.facts, node, assignment.module, resource.key);
        if (!stated || stated.definitionVersion !== version.definitionVersion || stated.artifact !== version.artifact) {
          facts.push({ type: FactCrashLooping.type, data: { ...where, version, resource: resource.key, restarts: outcome.restarts ?? 0, reason: outcome.reason ?? 'it keeps exiting' } });
        }
      }
    }
    const running = report.running.find((r) => r.module === assignment.module);
    if (running) {
      const now = { definitionVersion: running.definitionVersion, artifact: running.artifact };
      const previous = statedRunning(state.facts, node, assignment.module);
      if (!sameVersion(previous, now)) facts.push({ type: FactApplied.type, data: { ...where, version: now, previous: previous ?? null } });
    }
  }

  const declared = new Set(declaration.assignments.map((a) => a.module));
  for (const [module, previous] of runningOn(state.facts, node)) {
    if (!declared.has(module) && !report.running.some((r) => r.module === module)) {
      facts.push({ type: FactStopped.type, data: { node, module, declarationSequence: declaration.sequence, previous } });
    }
  }
  return facts;
};
