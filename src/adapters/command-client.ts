import type { NatsConnection } from '@nats-io/nats-core';
import { errors as natsErrors } from '@nats-io/nats-core';
import type { CommandResult } from '../controller/mesh-service.js';
import { planToolSubject, toolSubject, type PlanAnswer, type RefusedAnswer, type ToolAnswer } from '../controller/tool-server.js';
import type { MeshPlan } from '../domain/declarations/plan.js';
import type { MeshCommand } from '../domain/mesh/commands.js';
import { Refusal } from '../domain/refusal.js';
import { commandTooLarge, DEFAULT_MAX_PAYLOAD } from '../domain/operators/command-size.js';
import { MeshError, UnavailableError, type MeshErrorCode } from '../errors.js';
import { loadOperatorKey, signCommand } from './operator-keys.js';

// An operator's command on its way to the control plane: signed with the operator's key and sent
// to the mesh-controller seat's tool for its verb; the answer or the refusal comes back as it was
// decided.
//
// A command not answered in time is sent again, signed afresh (a signature lapses with the mesh's
// window) under the SAME command id: if the first did go through, the controller answers the
// retry as a duplicate of it, and if it was refused, as spent, naming that refusal; it is never
// carried out twice.

const COMMAND_TIMEOUT_MS = 30_000;
/** Sends of one command before the CLI gives up on an answer. */
const COMMAND_ATTEMPTS = 3;

/** How long each send waits for its answer, and how many sends there are: the CLI's own, unless a caller says. */
export interface SendOptions {
  timeoutMs?: number;
  attempts?: number;
}

/** What the controller answered: its events as it sent them, to show, never to fold. */
export type CommandAnswer = Omit<CommandResult, 'events'> & { events: unknown[] };

const isTimeout = (error: unknown): boolean => error instanceof natsErrors.TimeoutError;

export const sendSignedCommand = async (
  nc: NatsConnection,
  config: { operatorKeyFile: string; subjectPrefix: string },
  command: MeshCommand,
  commandId: string,
  options: SendOptions = {},
): Promise<CommandAnswer> => {
  const key = loadOperatorKey(config.operatorKeyFile);
  const subject = toolSubject(command.type, config.subjectPrefix);
  const timeoutMs = options.timeoutMs ?? COMMAND_TIMEOUT_MS;
  const attempts = options.attempts ?? COMMAND_ATTEMPTS;
  for (let attempt = 1; ; attempt++) {
    // Signed afresh for each send, with its own time; the command id stays the same.
    const signed = signCommand(key, commandId, command, new Date());
    // One that could never be logged is refused here, at once, rather than sent to time out.
    const tooLarge = commandTooLarge(signed, nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD);
    if (tooLarge) throw tooLarge;
    try {
      const reply = await nc.request(subject, JSON.stringify(signed), { timeout: timeoutMs });
      return outcomeOf(JSON.parse(reply.string()) as ToolAnswer, command.type);
    } catch (error) {
      if (error instanceof MeshError) throw error;
      if (isTimeout(error) && attempt < attempts) continue;
      const noController = error instanceof natsErrors.RequestError && error.isNoResponders();
      throw new UnavailableError(
        noController
          ? `no controller answers ${subject}: is the control plane running? (npx mesh dev up)`
          : `the controller did not answer ${command.type} in ${attempt} tries of ${timeoutMs / 1000} s each (command ${commandId}); it may still be carried out — run the same command again with --command-id ${commandId} to learn its outcome without repeating it`,
        { subject, commandId },
        { cause: error },
      );
    }
  }
};

/**
 * `--plan`: the commands signed as they would be sent, asked of the controller's plan tool for the
 * last one's verb (a drain's unassigns come before its removal). Nothing is appended.
 */
export const sendSignedPlan = async (nc: NatsConnection, config: { operatorKeyFile: string; subjectPrefix: string }, commands: readonly { command: MeshCommand; commandId: string }[]): Promise<MeshPlan & { commandIds: string[] }> => {
  const key = loadOperatorKey(config.operatorKeyFile);
  // Signed for the plan: the controller never takes these signatures as the commands' own.
  const signed = commands.map(({ command, commandId }) => signCommand(key, commandId, command, new Date(), 'plan'));
  for (const one of signed) {
    const tooLarge = commandTooLarge(one, nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD);
    if (tooLarge) throw tooLarge;
  }
  const verb = commands[commands.length - 1]?.command.type ?? 'command';
  const subject = planToolSubject(verb, config.subjectPrefix);
  let answer: PlanAnswer;
  try {
    answer = JSON.parse((await nc.request(subject, JSON.stringify({ commands: signed }), { timeout: COMMAND_TIMEOUT_MS })).string()) as PlanAnswer;
  } catch (error) {
    const noController = error instanceof natsErrors.RequestError && error.isNoResponders();
    throw new UnavailableError(noController ? `no controller answers ${subject}: is the control plane running? (npx mesh dev up)` : `the controller did not answer the plan of ${verb} in ${COMMAND_TIMEOUT_MS / 1000} s`, { subject }, { cause: error });
  }
  if (!answer.ok) throw refusedError(answer, verb);
  const { ok: _ok, ...plan } = answer;
  return plan;
};

/** A tool's answer as its caller takes it: the outcome, or the refusal or error it names, thrown. */
export const outcomeOf = (answer: ToolAnswer, verb: string): CommandAnswer => {
  if (answer.ok) return { summary: answer.summary, seq: answer.seq, duplicate: answer.duplicate, events: answer.events };
  throw refusedError(answer, verb);
};

const refusedError = (answer: RefusedAnswer, verb: string): Error => {
  const { code, ...details } = answer.error;
  if ((code === 'refused' || code === 'not_found') && answer.refused.length > 0) return new Refusal(typeof details.subject === 'string' ? details.subject : verb, answer.refused);
  return new MeshError(code as MeshErrorCode, answer.refused.map((r) => r.why).join('; '), details);
};

