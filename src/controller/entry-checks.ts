import type { MeshCommand } from '../domain/mesh/commands.js';
import { commandMetadataSchema } from '../domain/events/envelope.js';
import { TOKEN_TTL_MAX } from '../domain/nodes/token-limits.js';
import { commandTooLarge } from '../domain/operators/command-size.js';
import type { SignedCommand } from '../domain/operators/signed-command.js';
import { Refusal, type Problem } from '../domain/refusal.js';
import { ValidationError, type MeshError } from '../errors.js';

// What is checked where a signed command enters the controller, whatever carried it, before it
// is decided: that it can be logged at all (its size, its id) and what only a clock can judge,
// which the deciders never read (an enrolment token's expiry lies ahead, and not too far).

/** Clocks of an operator's machine and the controller's may disagree this much. */
const CLOCK_SKEW_MS = 5 * 60_000;

const timeProblems = (command: MeshCommand, now: Date): Problem[] => {
  if (command.type !== 'issue-enrolment-token') return [];
  const expires = Date.parse(command.expiresAt);
  if (Number.isNaN(expires)) return []; // the decider names it
  if (expires <= now.getTime()) {
    return [{ what: 'expiresAt', why: `the token would expire at ${command.expiresAt}, which has passed (the controller's clock says ${now.toISOString()}): it could never be spent`, remedy: 'give a positive --ttl, e.g. --ttl 1h' }];
  }
  if (expires > now.getTime() + TOKEN_TTL_MAX.ms + CLOCK_SKEW_MS) {
    return [{ what: 'expiresAt', why: `the token would live until ${command.expiresAt}, more than ${TOKEN_TTL_MAX.written} from now: ${TOKEN_TTL_MAX.why}`, remedy: `give a --ttl of ${TOKEN_TTL_MAX.written} or less` }];
  }
  return [];
};

export const entryRefusal = (signed: SignedCommand, command: MeshCommand, options: { maxPayload: number; now: Date }): MeshError | undefined => {
  const tooLarge = commandTooLarge(signed, options.maxPayload);
  if (tooLarge) return tooLarge;
  const id = commandMetadataSchema.shape.commandId.safeParse(signed.commandId);
  if (!id.success) {
    return new ValidationError(`command id "${signed.commandId.slice(0, 60)}" is refused: ${id.error.issues.map((i) => i.message).join('; ')} (it is part of the log's message id)`, { field: '--command-id', value: signed.commandId });
  }
  const problems = timeProblems(command, options.now);
  return problems.length > 0 ? new Refusal(`${command.type} (command ${signed.commandId})`, problems) : undefined;
};
