import { canonicalJson } from '../domain/canonical.js';
import type { SignedCommand } from '../domain/operators/signed-command.js';
import { Refusal } from '../domain/refusal.js';
import type { StoredMeshEvent } from '../domain/registry.js';

// A command id the log already holds is a retry only when it asks the same thing. The log keeps
// each operator's signed command with the events it caused, so the retry is compared with what
// was signed then: the same operator and the same command (its signing time aside, which a retry
// renews) is answered with the earlier outcome; anything else is refused as a conflict that names
// the earlier command and its sequence, so a second command is never dropped in silence. What the
// client makes afresh on every attempt is not part of what a command asks: a build's id, and the
// holder `mesh seat handover` read before asking (a retry after the handover reads the new one).
//
// An enrolment token's secret exists once, in the answer to the command that made it: the log
// keeps only its hash, so a retry cannot be answered with it and is refused saying so.

/** A command id the log holds already, sent with another command: the id is the earlier command's, never spent by this refusal. */
export class CommandIdReused extends Refusal {
  constructor(subject: string, problems: ConstructorParameters<typeof Refusal>[1]) {
    super(subject, problems);
    this.name = 'CommandIdReused';
  }
}

/** Fields a client fills in afresh on each attempt, by command type. */
const PER_ATTEMPT: Readonly<Record<string, readonly string[]>> = { 'submit-build': ['buildId'], 'hand-over-seat': ['expectedHolder'] };

/** The parts of the command that differ, as `command.<field>`, leaving out what each attempt makes afresh. */
const differingFields = (earlier: Record<string, unknown>, now: Record<string, unknown>): string[] => {
  const perAttempt = PER_ATTEMPT[String(now.type)] ?? [];
  return [...new Set([...Object.keys(earlier), ...Object.keys(now)])]
    .filter((key) => !perAttempt.includes(key) && canonicalJson(earlier[key]) !== canonicalJson(now[key]))
    .map((key) => `command.${key}`);
};

/**
 * Why `signed` may not be answered as a retry of the commit that holds its command id (`earlier`:
 * that commit's events), or undefined when it is that command again.
 */
export const commandIdReuse = (signed: SignedCommand, earlier: readonly StoredMeshEvent[]): Refusal | undefined => {
  const first = earlier[0];
  if (!first) return undefined;
  const before = first.signed;
  const subject = `${String(signed.command.type)} (command ${signed.commandId})`;
  const at = `log seq ${first.seq}`;
  const token = first.type === 'enrolment.token-issued' ? first.data : undefined;
  const same = before !== undefined && before.operator === signed.operator && differingFields(before.command, signed.command).length === 0;
  if (token && !same) {
    return new CommandIdReused(subject, [
      {
        what: `--command-id ${signed.commandId}`,
        why: `this command id already made enrolment token ${token.tokenId} at ${at} (valid until ${token.expiresAt}); its secret was shown once, in the answer to that command, and the log keeps only its hash, so it cannot be shown again`,
        remedy: `make a new token with a new command id (mesh node token, without --command-id); the first is of no use to anyone without its secret and lapses at ${token.expiresAt}`,
      },
    ]);
  }
  if (same) return undefined;
  const by = before ? `${String(before.command.type)} from operator ${before.operator}, signed at ${before.time}` : `${first.type} by ${first.actor}`;
  const differs = before ? differingFields(before.command, signed.command) : [];
  return new CommandIdReused(subject, [
    {
      what: `--command-id ${signed.commandId}`,
      why: `this command id was already used at ${at} by ${by}, and this command is not that one${differs.length > 0 ? ` (it differs in ${differs.join(', ')})` : before && before.operator !== signed.operator ? ` (it is from operator ${signed.operator})` : ''}; a command id names one command, so this one was not carried out`,
      remedy: `send it with a new command id (leave --command-id out and mesh makes one); to learn what ${at} did: mesh log --since ${first.seq}`,
    },
  ]);
};
