import type { NatsConnection, Subscription } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import { Refusal } from '../domain/refusal.js';
import { MeshError } from '../errors.js';
import { OPERATOR_COMMANDS, type CommandDispatcher } from './command-dispatcher.js';
import { serveTool } from './serve-tool.js';

// The mesh's own verbs as the mesh-controller seat's tools (ADR 0132): core request/reply on
// `<prefix>.seat.mesh-controller.tool.<verb>`, never persisted (what a call decides is). Every
// controller serves them in one queue group, so a call is answered once however many run.

export const toolSubject = (verb: string, prefix = 'mesh'): string => `${prefix}.seat.mesh-controller.tool.${verb}`;

export type ToolAnswer =
  | { ok: true; summary: string; seq: number; duplicate: boolean; events: unknown[] }
  | { ok: false; refused: { what: string; why: string; remedy: string }[]; error: { code: string } & Record<string, unknown> };

export const refusalAnswer = (error: unknown): ToolAnswer => {
  if (error instanceof Refusal) return { ok: false, refused: [...error.problems], error: { code: error.code, subject: error.subject } };
  if (error instanceof MeshError) return { ok: false, refused: [{ what: String(error.details.field ?? error.code), why: error.message, remedy: '' }], error: { code: error.code, ...error.details } };
  return { ok: false, refused: [{ what: 'internal', why: (error as Error)?.message ?? String(error), remedy: 'look at the controller log' }], error: { code: 'internal' } };
};

export class ToolServer {
  private readonly subscriptions: Subscription[] = [];

  constructor(
    private readonly nc: NatsConnection,
    private readonly dispatcher: CommandDispatcher,
    private readonly options: { prefix: string; logger: Logger },
  ) {}

  start(): void {
    for (const verb of OPERATOR_COMMANDS) {
      this.subscriptions.push(serveTool(this.nc, toolSubject(verb, this.options.prefix), (payload) => this.answer(verb, payload)));
    }
  }

  stop(): void {
    for (const subscription of this.subscriptions.splice(0)) subscription.unsubscribe();
  }

  private async answer(verb: string, payload: Uint8Array): Promise<ToolAnswer> {
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
