import { parseSequence } from '../domain/limits.js';
import type { MeshState } from '../domain/mesh/state.js';
import { ValidationError } from '../errors.js';

// `--at SEQ|TIME` on a read: the mesh as it was at a log sequence, or at the last commit at or
// before a time. Projections hold only the present, so this is the one read that folds the log:
// from the controller's snapshot of its fold when that was taken at or before the sequence (and
// passes every check fold-snapshots.ts makes), else from seq 1, up to the sequence and no further.
// It costs the history up to there; it is an operator's question about the past, never a hot path.
// The fold is in at-fold.ts, loaded only when --at is given: a read of the present loads none of it.

export type AtFlag = { seq: number } | { time: Date; written: string };

/** `--at 1234` or `--at 2026-12-04T15:00:00Z` (any ISO 8601 time with a date). */
export const atFlag = (value: string | undefined): AtFlag | undefined => {
  if (value === undefined) return undefined;
  if (/^\d+$/.test(value)) {
    const parsed = parseSequence(value);
    if ('why' in parsed) throw new ValidationError(`--at ${parsed.why}; give a log sequence from 1 (\`mesh log\` shows them) or an ISO time`, { field: '--at', value });
    return { seq: parsed.seq };
  }
  const time = /^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(value) ? new Date(value) : new Date(Number.NaN);
  if (Number.isNaN(time.getTime())) throw new ValidationError(`--at "${value}" is neither a log sequence nor an ISO time like 2026-12-04T15:00:00Z`, { field: '--at', value });
  return { time, written: value };
};

/** Which sequence an answer about the past is for, and how the mesh then was found. */
export interface AsOf {
  /** the sequence the answer is for */
  seq: number;
  /** the time of the commit at that sequence */
  time: string;
  /** "from the snapshot at seq N" or "from seq 1 (why)" */
  from: string;
}

/** The mesh as of one sequence, and where its fold started. */
export interface MeshAt extends AsOf {
  state: MeshState;
}

/** What a --json answer about the past carries. */
export const asOfData = (asOf: AsOf): { asOf: AsOf } => ({ asOf: { seq: asOf.seq, time: asOf.time, from: asOf.from } });

/** Folds the log up to the sequence `at` names and hands the mesh as it was then to `work` (at-fold.ts). */
export const withMeshAt = async <T>(at: AtFlag, work: (mesh: MeshAt) => Promise<T>): Promise<T> => (await import('./at-fold.js')).foldMeshAt(at, work);

/** What an answer at a sequence says first: which sequence it answers for, and how it was found. */
export const asOfLine = (asOf: AsOf): string => `as of sequence ${asOf.seq} (${asOf.time}), folded ${asOf.from}`;

/** `--at` as every read offers it; declared with the verbs, which load nothing else. */
export { AT_OPTION } from './verbs.js';
