import type { MeshCommand } from '../domain/mesh/commands.js';
import { commandMetadataSchema } from '../domain/events/envelope.js';
import { TOKEN_TTL_MAX } from '../domain/nodes/token-limits.js';
import { commandTooLarge } from '../domain/operators/command-size.js';
import type { SignedCommand, SignedFor } from '../domain/operators/signed-command.js';
import { windowInWords } from '../domain/operators/command-window.js';
import { Refusal, type Problem } from '../domain/refusal.js';
import { ValidationError, type MeshError } from '../errors.js';

// What is checked where a signed command enters the controller, whatever carried it, before it
// is decided: that it can be logged at all (its size, its id), that its signature was made for
// what it is sent for (carried out, or planned), and what only a clock can judge, which the
// deciders never read (it was signed within the mesh's window of now; an enrolment token's expiry
// lies ahead, and not too far).

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

const STRICT_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})$/;

/** A span as a person says it: `10 minutes`, `3 hours`, `9221 days`. */
const roughly = (ms: number): string => {
  const [value, unit] = ms >= 2 * 86_400_000 ? [ms / 86_400_000, 'day'] : ms >= 2 * 3_600_000 ? [ms / 3_600_000, 'hour'] : ms >= 2 * 60_000 ? [ms / 60_000, 'minute'] : [ms / 1000, 'second'];
  const whole = Math.round(value);
  return `${whole} ${unit}${whole === 1 ? '' : 's'}`;
};

/** Signed within the mesh's window of the controller's clock, either way (command-window.ts). */
const freshnessProblems = (signed: SignedCommand, now: Date, windowSeconds: number): Problem[] => {
  const at = STRICT_TIME.test(signed.time) ? Date.parse(signed.time) : Number.NaN;
  if (Number.isNaN(at)) {
    return [{ what: 'time', why: `the command says it was signed at "${signed.time.slice(0, 40)}", which is not an ISO 8601 time: the mesh accepts only commands signed within ${windowInWords(windowSeconds)} of its clock`, remedy: 'send it with `mesh`, which signs it with the time it signs it at' }];
  }
  const offMs = at - now.getTime();
  if (Math.abs(offMs) <= windowSeconds * 1000) return [];
  const off = `${roughly(Math.abs(offMs))} ${offMs < 0 ? 'ago' : 'ahead'}`;
  return [
    {
      what: 'time',
      why: `signed at ${new Date(at).toISOString()}, the controller's clock says ${now.toISOString()} (${off}), and the mesh accepts commands signed within ${windowInWords(windowSeconds)}: a command signed earlier may be a replay, one signed later a clock that is wrong`,
      remedy: "check the clock of the machine that signed it against the controller's, then send the command again (mesh signs it afresh, with a new command id unless --command-id is given)",
    },
  ];
};

/** The signature was made for what the command is sent for: a plan's is never the command's, nor the reverse. */
const purposeProblems = (signed: SignedCommand, expected: SignedFor): Problem[] => {
  if (signed.purpose === expected) return [];
  if (signed.purpose === undefined) {
    return [{ what: 'purpose', why: 'the command is signed in the form from before a signature said what it is for (to carry a command out, or to plan it): the log keeps old commands signed so, but a new one is refused, since its signature would serve a plan and the command alike', remedy: 'send it with this version of `mesh`, which signs what each signature is for' }];
  }
  return [
    {
      what: 'purpose',
      why: expected === 'carry-out' ? 'this signature was made for a plan (mesh … --plan), which appends nothing; it does not carry the command out' : 'this signature was made to carry the command out, not to plan it',
      remedy: expected === 'carry-out' ? 'run the command without --plan: mesh signs it again, for carrying it out' : 'run the command with --plan: mesh signs it again, for the plan',
    },
  ];
};

export const entryRefusal = (signed: SignedCommand, command: MeshCommand, options: { maxPayload: number; now: Date; windowSeconds: number; purpose: SignedFor }): MeshError | undefined => {
  const tooLarge = commandTooLarge(signed, options.maxPayload);
  if (tooLarge) return tooLarge;
  const id = commandMetadataSchema.shape.commandId.safeParse(signed.commandId);
  if (!id.success) {
    return new ValidationError(`command id "${signed.commandId.slice(0, 60)}" is refused: ${id.error.issues.map((i) => i.message).join('; ')} (it is part of the log's message id)`, { field: '--command-id', value: signed.commandId });
  }
  const problems = [...purposeProblems(signed, options.purpose), ...freshnessProblems(signed, options.now, options.windowSeconds), ...timeProblems(command, options.now)];
  return problems.length > 0 ? new Refusal(`${command.type} (command ${signed.commandId})`, problems) : undefined;
};
