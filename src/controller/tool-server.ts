import { errors as natsErrors, type NatsConnection, type Subscription } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import { Refusal, type Problem } from '../domain/refusal.js';
import { MeshError } from '../errors.js';
import { OPERATOR_COMMANDS, type CommandDispatcher } from './command-dispatcher.js';
import { serveTool, WRITER_QUEUE } from './serve-tool.js';
import type { MeshPlan } from '../domain/declarations/plan.js';
import { describeSpeaker, refuseImpersonation, speakerOfReply, type ImpersonationMetrics } from './speaker.js';

// The mesh's own verbs as the mesh-controller seat's tools (ADR 0132): core request/reply on
// `<prefix>.seat.mesh-controller.tool.<verb>`, never persisted (what a call decides is). Every
// controller serves them in one queue group, so a call is answered once however many run.

export const toolSubject = (verb: string, prefix = 'mesh'): string => `${prefix}.seat.mesh-controller.tool.${verb}`;

/** Where the controller that is the mesh's writer takes the calls the others pass on. */
export const writerToolSubject = (verb: string, prefix = 'mesh'): string => `${prefix}.seat.mesh-controller.tool.writer.${verb}`;

/**
 * `mesh … --plan`: the same verbs, decided without appending. Any controller answers (each folds
 * the log), so a plan never waits on the writer.
 */
export const planToolSubject = (verb: string, prefix = 'mesh'): string => `${prefix}.seat.mesh-controller.tool.plan.${verb}`;

/** How long a standing-by controller waits for the writer's answer to a call it passed on. */
const PASSED_ON_TIMEOUT_MS = 30_000;

export type ToolAnswer =
  | { ok: true; summary: string; seq: number; duplicate: boolean; events: unknown[] }
  | { ok: false; refused: Problem[]; error: { code: string } & Record<string, unknown> };

export type RefusedAnswer = Extract<ToolAnswer, { ok: false }>;

export type PlanAnswer = ({ ok: true } & MeshPlan & { commandIds: string[] }) | RefusedAnswer;

export const refusalAnswer = (error: unknown): RefusedAnswer => {
  if (error instanceof Refusal) return { ok: false, refused: [...error.problems], error: { code: error.code, subject: error.subject } };
  if (error instanceof MeshError) return { ok: false, refused: [{ what: String(error.details.field ?? error.code), why: error.message, remedy: '' }], error: { code: error.code, ...error.details } };
  return { ok: false, refused: [{ what: 'internal', why: (error as Error)?.message ?? String(error), remedy: 'look at the controller log' }], error: { code: 'internal' } };
};

export interface ToolServerOptions {
  prefix: string;
  logger: Logger;
  /**
   * Whether this process is the mesh's writer (writer-lease.ts), once it knows (`known`). When
   * given, a call that reaches a process that is not is passed on, as it came, to the one that is,
   * and its answer returned; the writer takes them on `writerToolSubject` too. Absent: this process
   * decides every call.
   */
  role?: { isWriter: () => boolean; known: Promise<void>; takeoverMs: number };
  /** counts a call refused because the bus user it came over is not the operator who signed it */
  metrics?: Partial<ImpersonationMetrics>;
}

export class ToolServer {
  private readonly subscriptions: Subscription[] = [];
  private readonly writerSubscriptions: Subscription[] = [];

  constructor(
    private readonly nc: NatsConnection,
    private readonly dispatcher: CommandDispatcher,
    private readonly options: ToolServerOptions,
  ) {}

  start(): void {
    for (const verb of OPERATOR_COMMANDS) {
      this.subscriptions.push(serveTool(this.nc, toolSubject(verb, this.options.prefix), (payload, reply) => this.speakerRefusal(payload, reply, false) ?? this.answer(verb, payload)));
      this.subscriptions.push(serveTool(this.nc, planToolSubject(verb, this.options.prefix), (payload, reply) => this.speakerRefusal(payload, reply, true) ?? this.plan(verb, payload)));
    }
  }

  /**
   * A call that came another way (the HTTP API), answered as a tool call is: decided here by the
   * writer, passed on to it by a controller standing by.
   */
  async call(verb: string, input: unknown): Promise<ToolAnswer> {
    const answer = await this.answer(verb, new TextEncoder().encode(JSON.stringify(input)));
    return answer instanceof Uint8Array ? (JSON.parse(new TextDecoder().decode(answer)) as ToolAnswer) : answer;
  }

  /** This process became the writer: it takes the calls the others pass on. */
  serveAsWriter(): void {
    if (this.writerSubscriptions.length > 0) return;
    for (const verb of OPERATOR_COMMANDS) {
      this.writerSubscriptions.push(serveTool(this.nc, writerToolSubject(verb, this.options.prefix), (payload, reply) => this.speakerRefusal(payload, reply, false) ?? this.decide(verb, payload), WRITER_QUEUE));
    }
  }

  stop(): void {
    for (const subscription of [...this.subscriptions.splice(0), ...this.writerSubscriptions.splice(0)]) subscription.unsubscribe();
  }

  /**
   * A refusal when the bus user a call came over is not who signed it: an operator relaying
   * another's command, a host or a joining machine sending one. Undefined when the signature alone
   * judges it (the controller, an inbox that names no principal) or the operators agree.
   */
  private speakerRefusal(payload: Uint8Array, reply: string | undefined, plan: boolean): Promise<RefusedAnswer> | undefined {
    const speaker = speakerOfReply(reply);
    if (!speaker || speaker.kind === 'controller') return undefined;
    let signers: string[];
    try {
      const input = JSON.parse(new TextDecoder().decode(payload)) as unknown;
      const commands = plan ? (isRecord(input) && Array.isArray(input.commands) ? input.commands : []) : [input];
      // an unsigned command names nobody: the dispatcher refuses it as such
      signers = [...new Set(commands.flatMap((c) => (isRecord(c) && typeof c.operator === 'string' ? [c.operator] : [])))];
    } catch {
      return undefined; // unreadable: the dispatcher refuses it, saying why
    }
    const other = signers.find((signer) => speaker.kind !== 'operator' || signer !== speaker.operator);
    if (other === undefined) return undefined;
    const problem = refuseImpersonation(this.options, { entry: 'tool', identity: describeSpeaker(speaker), claimed: `operator ${other}`, field: 'operator' });
    return Promise.resolve({ ok: false, refused: [problem], error: { code: 'refused' } });
  }

  private async answer(verb: string, payload: Uint8Array): Promise<ToolAnswer | Uint8Array> {
    const role = this.options.role;
    if (!role) return this.decide(verb, payload);
    await role.known;
    return role.isWriter() ? this.decide(verb, payload) : this.passOn(verb, payload, role);
  }

  /**
   * A call to a controller that is not the writer: to the writer, as it came (it checks the
   * signature). While no writer answers (one is taking over) it is asked again for as long as a
   * takeover takes — or decided here, if this process becomes the writer meanwhile.
   */
  private async passOn(verb: string, payload: Uint8Array, role: NonNullable<ToolServerOptions['role']>): Promise<ToolAnswer | Uint8Array> {
    const deadline = Date.now() + role.takeoverMs;
    try {
      for (;;) {
        if (role.isWriter()) return await this.decide(verb, payload);
        try {
          // The writer's answer, as it came.
          return (await this.nc.request(writerToolSubject(verb, this.options.prefix), payload, { timeout: PASSED_ON_TIMEOUT_MS })).data;
        } catch (error) {
          const noWriter = error instanceof natsErrors.NoRespondersError || (error instanceof natsErrors.RequestError && error.isNoResponders());
          if (!noWriter || Date.now() > deadline) throw error;
          await new Promise((r) => setTimeout(r, 200));
        }
      }
    } catch (error) {
      this.options.logger.warn({ err: error, verb }, 'a call passed on to the writer was not answered');
      return {
        ok: false,
        refused: [
          {
            what: 'the mesh writer',
            why: `this controller is standing by and no controller answered as the mesh's writer (${(error as Error).message}): one is taking over, or none is running`,
            remedy: 'send it again in a few seconds with the same command id (it acts once); `mesh status` shows the controllers',
          },
        ],
        error: { code: 'unavailable' },
      };
    }
  }

  private async plan(verb: string, payload: Uint8Array): Promise<PlanAnswer> {
    try {
      return { ok: true, ...(await this.dispatcher.plan(JSON.parse(new TextDecoder().decode(payload)), verb)) };
    } catch (error) {
      if (!(error instanceof MeshError)) this.options.logger.error({ err: error, verb }, 'plan failed');
      return refusalAnswer(error);
    }
  }

  private async decide(verb: string, payload: Uint8Array): Promise<ToolAnswer> {
    try {
      const input: unknown = JSON.parse(new TextDecoder().decode(payload));
      const result = await this.dispatcher.dispatch(input, verb);
      return { ok: true, summary: result.summary, seq: result.seq, duplicate: result.duplicate, events: result.events };
    } catch (error) {
      if (!(error instanceof MeshError)) this.options.logger.error({ err: error, verb }, 'tool call failed');
      return refusalAnswer(error);
    }
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;
