import { MeshError } from '../errors.js';

// What the control plane's parts tell whoever measures them. The parts call these ports and know
// nothing of how they are counted; the composition root hands them an implementation (Prometheus:
// src/adapters/prometheus-metrics.ts), and without one nothing is counted.

/** How a command ended: carried out, refused (bad input, a rule, nothing there), beaten by a concurrent change, or failed. */
export type CommandOutcome = 'ok' | 'refused' | 'conflict' | 'error';

/**
 * What became of a report read from CONTROL: `impersonating` when it named another node than the
 * one that sent it (speaker.ts), `replaced` by a newer one from its node before it was judged,
 * `waiting` for its facts' interval (fact-budget.ts).
 */
export type ReportOutcome = 'acted' | 'not-outstanding' | 'unreadable' | 'retried' | 'impersonating' | 'replaced' | 'waiting';

export interface CommandMetrics {
  commandDecided(verb: string, outcome: CommandOutcome, seconds: number): void;
}

export interface ReportMetrics {
  reportRead(outcome: ReportOutcome): void;
  /** the types of the facts one report caused, once they are in the log */
  factsStated(types: readonly string[]): void;
}

/** The outcome an error stands for, by its stable code. */
export const commandOutcomeOf = (error: unknown): CommandOutcome => {
  if (!(error instanceof MeshError)) return 'error';
  switch (error.code) {
    case 'validation':
    case 'refused':
    case 'not_found':
      return 'refused';
    case 'concurrency':
      return 'conflict';
    default:
      return 'error';
  }
};
