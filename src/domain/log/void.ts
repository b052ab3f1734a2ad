import { z } from 'zod';
import type { Decision } from '../decision.js';
import { refuseIfAny, type Problem } from '../refusal.js';
import { LogVoided, voidAggregate } from './events.js';

// `mesh log void SEQ --reason …`: an operator, having looked at a commit every reader is held at,
// lets them pass it. Only such a commit can be voided: one that does not read, or does not verify
// as the writer's (its signature, or its link to the commit before). A commit that verifies, or a
// sequence the log does not hold, is refused — a void never hides a good commit.

/** A commit a reader passed by because an operator voided it. Readers say so; they never pass one silently. */
export interface PassedCommit {
  seq: number;
  /** the aggregate it was stored under */
  aggregate: string;
  /** what was wrong with it, as found when it was voided */
  problem: string;
  reason: string;
  /** the sequence of the void */
  voidSeq: number;
  /** who voided it: `operator:<name>` */
  actor: string;
}

/** What the log holds at a sequence, as a reader of the whole log judges it. */
export type CommitFinding =
  | { exists: false; seq: number; head: number }
  | { exists: true; seq: number; aggregate: string; problem: string | null; voided: PassedCommit | null };

/** What an operator sends: `found` is never theirs to say. */
export const voidCommitSchema = z.strictObject({ type: z.literal('void-commit'), seq: z.number(), reason: z.string() });
export type VoidCommit = z.infer<typeof voidCommitSchema> & {
  /** what the controller found at `seq`: filled in by the mesh service, which reads the log, before deciding */
  found?: CommitFinding;
};

const REMEDY = 'give the sequence readers are held at (`mesh status` names it)';

export const decideVoidCommit = (command: VoidCommit): Decision => {
  const subject = `voiding log seq ${command.seq}`;
  const problems: Problem[] = [];
  if (!Number.isInteger(command.seq) || command.seq < 1) problems.push({ what: 'seq', why: `${command.seq} is not a log sequence (a whole number from 1)`, remedy: REMEDY });
  if (typeof command.reason !== 'string' || command.reason.trim() === '') problems.push({ what: 'reason', why: 'a void says why the commit is passed by', remedy: 'give --reason "…"' });
  refuseIfAny(subject, problems);
  const found = command.found;
  if (!found) throw new Error(`void-commit of seq ${command.seq} reached the decider without what the log holds there`);
  if (!found.exists) problems.push({ what: `seq ${command.seq}`, why: `the log holds no commit there (its last is seq ${found.head})`, remedy: REMEDY });
  else if (found.voided) problems.push({ what: `seq ${command.seq}`, why: `it was voided already, at seq ${found.voided.voidSeq} by ${found.voided.actor}`, remedy: 'nothing to do: readers pass it by' });
  else if (found.problem === null) problems.push({ what: `seq ${command.seq}`, why: `it reads and verifies as the writer's (${found.aggregate}): no reader is held there`, remedy: 'a void is only for a commit that does not read or verify' });
  refuseIfAny(subject, problems);
  if (!found.exists || found.problem === null) throw new Error('unreachable: refused above');
  return {
    aggregate: voidAggregate(command.seq),
    events: [{ type: LogVoided.type, data: { seq: command.seq, aggregate: found.aggregate, reason: command.reason.trim(), problem: found.problem } }],
    summary: `log seq ${command.seq} (${found.aggregate}) voided: every reader passes it by, saying so`,
  };
};
