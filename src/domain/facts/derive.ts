import type { Declaration } from '../declarations/declaration.js';
import type { MeshEvent } from '../registry.js';
import type { MeshState } from '../mesh/state.js';
import type { Report } from '../reports/report.js';
import { heldModulesOn, statedCrashLoop, statedHolds, statedRefusal, statedRunning, runningOn, type StatedHold } from './state.js';
import { FactApplied, FactCapabilities, FactCrashLooping, FactHeld, FactRefused, FactReportMismatch, FactStopped, type HeldResource, type RunningVersion } from './events.js';

// From one report about the outstanding declaration to the facts it changes (ADR 0134: stated on
// change, not per pass). The state says what has been stated already, so two identical reports
// make one fact, and a controller re-reading its reports states nothing twice.

/** The same resources held for the same reasons: nothing to state. */
const sameHold = (stated: ReadonlyMap<string, StatedHold>, now: HeldResource[]): boolean =>
  stated.size === now.length && now.every((h) => {
    const before = stated.get(h.resource);
    return before !== undefined && before.reason === h.reason && before.kind === h.kind;
  });

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
    const held: HeldResource[] = [];
    for (const resource of assignment.resources) {
      const outcome = outcomes.get(resource.key);
      if (outcome?.outcome === 'refused') {
        const reason = outcome.reason ?? 'refused without a reason';
        const stated = statedRefusal(state.facts, node, assignment.module, resource.key);
        if (stated?.reason !== reason || stated.definitionVersion !== version.definitionVersion || stated.artifact !== version.artifact) {
          facts.push({ type: FactRefused.type, data: { ...where, version, resource: resource.key, kind: resource.kind, reason } });
        }
      } else if (outcome?.outcome === 'held') {
        held.push({ resource: resource.key, kind: resource.kind, reason: outcome.reason });
      } else if (outcome?.outcome === 'crash-looping') {
        const stated = statedCrashLoop(state.facts, node, assignment.module, resource.key);
        if (!stated || stated.definitionVersion !== version.definitionVersion || stated.artifact !== version.artifact) {
          facts.push({ type: FactCrashLooping.type, data: { ...where, version, resource: resource.key, restarts: outcome.restarts ?? 0, reason: outcome.reason ?? 'it keeps exiting' } });
        }
      }
    }
    // A node that refused the declaration as a whole changed nothing: what it held, it still holds.
    if (report.refusal === null && !sameHold(statedHolds(state.facts, node, assignment.module), held)) facts.push({ type: FactHeld.type, data: { ...where, resources: held } });
    const running = report.running.find((r) => r.module === assignment.module);
    if (running) {
      const now = { definitionVersion: running.definitionVersion, artifact: running.artifact };
      const previous = statedRunning(state.facts, node, assignment.module);
      if (!sameVersion(previous, now)) facts.push({ type: FactApplied.type, data: { ...where, version: now, previous: previous ?? null } });
    }
  }

  const declared = new Set(declaration.assignments.map((a) => a.module));
  // A module no longer declared holds nothing on the node: its hold, if one was stated, has ended.
  if (report.refusal === null) {
    for (const module of heldModulesOn(state.facts, node).keys()) {
      if (!declared.has(module)) facts.push({ type: FactHeld.type, data: { node, module, declarationSequence: declaration.sequence, resources: [] } });
    }
  }
  for (const [module, previous] of runningOn(state.facts, node)) {
    if (!declared.has(module) && !report.running.some((r) => r.module === module)) {
      facts.push({ type: FactStopped.type, data: { node, module, declarationSequence: declaration.sequence, previous } });
    }
  }
  return facts;
};

/** What a node's heartbeat says it applies, as a fact when it differs from what was stated (ADR 0134: on change). */
export const deriveCapabilities = (state: MeshState, node: string, capabilities: readonly string[]): MeshEvent[] => {
  const now = [...new Set(capabilities)].sort();
  const stated = state.facts.byNode.get(node)?.capabilities ?? null;
  if (stated !== null && stated.length === now.length && stated.every((c, i) => c === now[i])) return [];
  return [{ type: FactCapabilities.type, data: { node, capabilities: now } }];
};
