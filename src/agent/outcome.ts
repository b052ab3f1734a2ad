import type { Result } from 'execa';
import type { ResourceOutcome } from '../domain/reports/report.js';

/** What applying one resource came to, before the report names the resource. */
export type Outcome = Pick<ResourceOutcome, 'outcome' | 'reason' | 'restarts'>;

export const applied: Outcome = { outcome: 'applied', reason: null, restarts: null };
export const held = (reason: string): Outcome => ({ outcome: 'held', reason, restarts: null });
export const refused = (reason: string): Outcome => ({ outcome: 'refused', reason, restarts: null });
export const crashLooping = (restarts: number, reason: string): Outcome => ({ outcome: 'crash-looping', reason, restarts });

/** The last characters of a command's output, for a reason a person reads. */
export const tail = (output: string, max = 400): string => {
  const trimmed = output.trim();
  return trimmed.length <= max ? trimmed : `…${trimmed.slice(-max)}`;
};

/** How a command ended, for a reason a person reads: a process's last exit, a step's failure. */
export const exitDescription = (result: Result): string => {
  if (result.signal) return `was killed by ${result.signal}`;
  if (result.exitCode === undefined) return `could not start: ${result.originalMessage || result.shortMessage}`;
  return `exited with status ${result.exitCode}`;
};
