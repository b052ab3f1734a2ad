import type { NatsConnection, Subscription } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import type { EventLog } from '../adapters/eventlog/event-log.js';
import { passedLine, type PassedCommit } from '../adapters/eventlog/chain-reader.js';
import type { StoredEvent } from '../domain/events/envelope.js';
import { catchUpRequestSchema, catchUpToolSubject, isAfter, type CatchUpPage, type CatchUpRequest } from '../domain/facts/catch-up.js';
import { refusalAnswer, type ToolAnswer } from './tool-server.js';
import { ValidationError } from '../errors.js';
import { serveTool } from './serve-tool.js';

// The `catch-up` tool: every fact after a position, from the log (the facts' truth; EVENTS keeps
// them only for a while), a page per request. Served in the `mesh-controller` queue group like
// every tool, so one controller answers each page; any controller can answer the next.

const DEFAULT_PAGE = 500;

export class CatchUpTool {
  private subscription: Subscription | undefined;

  constructor(
    private readonly nc: NatsConnection,
    private readonly log: EventLog,
    private readonly options: { prefix: string; logger: Logger },
  ) {}

  start(): void {
    this.subscription = serveTool(this.nc, catchUpToolSubject(this.options.prefix), (payload) => this.answer(payload));
  }

  stop(): void {
    this.subscription?.unsubscribe();
  }

  private async answer(payload: Uint8Array): Promise<CatchUpPage<StoredEvent> | ToolAnswer> {
    try {
      const parsed = catchUpRequestSchema.safeParse(JSON.parse(new TextDecoder().decode(payload)));
      if (!parsed.success) throw new ValidationError(`not a catch-up request: ${parsed.error.issues[0]?.path.join('.')} ${parsed.error.issues[0]?.message}`, { field: 'request' });
      return await this.page(parsed.data);
    } catch (error) {
      this.options.logger.warn({ err: error }, 'catch-up not answered');
      return refusalAnswer(error);
    }
  }

  private async page(request: CatchUpRequest): Promise<CatchUpPage<StoredEvent>> {
    const limit = request.limit ?? DEFAULT_PAGE;
    const head = await this.log.headSeq();
    const facts: StoredEvent[] = [];
    const passed: PassedCommit[] = [];
    let more = false;
    // A fact commit that does not verify stops the answer with a refusal naming it; one an
    // operator voided is passed by, and the page says so.
    const onPassed = (commit: PassedCommit): void => {
      passed.push(commit);
      this.options.logger.warn({ asker: request.asker, seq: commit.seq, voidSeq: commit.voidSeq }, passedLine(commit));
    };
    for await (const event of this.log.read({ aggregate: 'fact', fromSeq: Math.max(1, request.after.seq), onPassed })) {
      if (!isAfter(event, request.after)) continue;
      if (facts.length === limit) {
        more = true;
        break;
      }
      facts.push(event);
    }
    const last = facts.at(-1);
    this.options.logger.debug({ asker: request.asker, after: request.after, facts: facts.length, more }, 'catch-up page');
    return { ok: true, facts, next: last ? { seq: last.seq, index: last.index } : request.after, more, head, ...(passed.length > 0 ? { passed } : {}) };
  }
}
