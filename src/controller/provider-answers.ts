import type { NatsConnection, Subscription } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import { answerToInbox, isInboxReply } from '../adapters/nats/answer.js';
import { z } from 'zod';
import { sha256Digest } from '../domain/canonical.js';
import { assignmentRef } from '../domain/seats/events.js';
import { providerAnswerSubject } from '../domain/bus/users.js';
import type { MeshService } from './mesh-service.js';
import { refusalAnswer, type ToolAnswer } from './tool-server.js';
import { WRITER_QUEUE } from './serve-tool.js';
import { assignmentOf } from '../domain/assignments/state.js';
import type { MeshState } from '../domain/mesh/state.js';
import { refuseImpersonation, type ImpersonationMetrics } from './speaker.js';

// `answer-consumer` as a provider's own bus tool (issue 124; ADR 0007 for a route's public name): a
// module answers on `<prefix>.seat.mesh-controller.tool.answer-consumer.<node>.<module>`, a subject
// only its own bus identity may publish to (src/domain/bus/users.ts) — so the subject is who
// answers, as the server vouches for it, and the command is recorded with that module as its
// actor. No operator signs it: an operator's answer is the signed `answer-consumer` tool.
//
// The body cannot name the provider (it has no such field); what it can name is a consumer's
// requirement another provider answers, and a command id. The first is refused with a finding
// before it is decided (speaker.ts); the second is kept in the provider's own namespace
// (`answer:<node>.<module>:<id>`), so no provider can take a command id another will use and have
// that one's answer read as a retry of its own.

const answerBodySchema = z.strictObject({
  consumer: assignmentRef,
  requirement: z.string().min(1),
  values: z.record(z.string(), z.string()),
  /** a retry of the same answer acts once; absent, the answer and the log's head at the time name it. Kept in the provider's own namespace, so bounded to leave room for it */
  commandId: z.string().min(1).max(100).optional(),
});
export type ProviderAnswerBody = z.infer<typeof answerBodySchema>;

export class ProviderAnswerService {
  private subscription: Subscription | undefined;

  constructor(
    private readonly nc: NatsConnection,
    private readonly mesh: MeshService,
    private readonly options: { prefix: string; logger: Logger; metrics?: Partial<ImpersonationMetrics> },
  ) {}

  /** Served by the writer alone: what it decides is appended at once. */
  start(): void {
    const tokens = providerAnswerSubject(this.options.prefix, '*', '*').split('.').length;
    this.subscription = this.nc.subscribe(providerAnswerSubject(this.options.prefix, '*', '*'), {
      queue: WRITER_QUEUE,
      callback: (error, message) => {
        if (error || !isInboxReply(message.reply)) return; // answered on an inbox or not at all (answer.ts)
        const parts = message.subject.split('.');
        const provider = parts.length === tokens ? { node: parts[tokens - 2] ?? '', module: parts[tokens - 1] ?? '' } : undefined;
        void this.answer(provider, message.data).then((reply) => answerToInbox(message, JSON.stringify(reply)));
      },
    });
  }

  stop(): void {
    this.subscription?.unsubscribe();
  }

  private async answer(provider: { node: string; module: string } | undefined, payload: Uint8Array): Promise<ToolAnswer> {
    let body: ProviderAnswerBody;
    try {
      if (!provider) throw new Error('the subject names no provider');
      body = answerBodySchema.parse(JSON.parse(new TextDecoder().decode(payload)));
    } catch (error) {
      return { ok: false, refused: [{ what: 'answer', why: `not a provider's answer: ${(error as Error).message}`, remedy: 'send { consumer: { node, module }, requirement, values } on your own answer-consumer subject' }], error: { code: 'validation' } };
    }
    const command = { type: 'answer-consumer' as const, provider, consumer: body.consumer, requirement: body.requirement, values: body.values };
    try {
      const state = await this.mesh.current();
      const other = resolvedProvider(state, body);
      if (other && (other.node !== provider.node || other.module !== provider.module)) {
        const problem = refuseImpersonation(this.options, {
          entry: 'answer-consumer',
          identity: `module ${provider.module} on ${provider.node}`,
          claimed: `${other.node}/${other.module}, which answers ${body.consumer.node}/${body.consumer.module}'s ${body.requirement}`,
          field: 'requirement',
        });
        return { ok: false, refused: [problem], error: { code: 'refused' } };
      }
      const scope = `answer:${provider.node}.${provider.module}:`;
      const commandId = body.commandId === undefined ? `${scope}${sha256Digest(command).slice(7, 23)}:${state.seq}` : `${scope}${body.commandId}`;
      const result = await this.mesh.execute(command, { commandId, actor: `module:${provider.node}/${provider.module}` });
      return { ok: true, summary: result.summary, seq: result.seq, duplicate: result.duplicate, events: result.events };
    } catch (error) {
      this.options.logger.info({ provider, consumer: body.consumer, requirement: body.requirement, err: (error as Error).message }, 'a provider answer refused');
      return refusalAnswer(error);
    }
  }
}

/** The assignment the mesh resolved a consumer's requirement to, if it is one (a route's public name is the proxy holder's: routes/grants.ts). */
const resolvedProvider = (state: MeshState, body: ProviderAnswerBody): { node: string; module: string } | undefined => {
  const answer = assignmentOf(state.assignments, body.consumer)?.resolutions.find((r) => r.requirement === body.requirement)?.answer;
  return answer?.kind === 'assignment' ? { node: answer.node, module: answer.module } : undefined;
};
