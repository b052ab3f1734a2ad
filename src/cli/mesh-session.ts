import { randomUUID } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { loadConfig, type MeshConfig } from '../config.js';
import { connectAsOperator } from './bus-connection.js';
import { verifyLogStream } from '../adapters/eventlog/log-stream.js';
import { sendSignedCommand, sendSignedPlan, type CommandAnswer } from '../adapters/command-client.js';
import type { MeshPlan } from '../domain/declarations/plan.js';
import { printPlan } from './plan-output.js';
import { commandMetadataSchema, type CommandMetadata } from '../domain/events/envelope.js';
import { ValidationError } from '../errors.js';
import type { MeshCommand } from '../domain/mesh/commands.js';
import type { Output } from './output.js';

// One CLI invocation's way to command the mesh: commands are signed with the operator's key and
// sent to the controller as the mesh-controller seat's tools, which verify and decide them (a
// request is never persisted; the events it causes are). Reads never fold the log here: they read
// the projections (reads.ts).

/** What a command answered: carried out, or, with --plan, what it would do (nothing appended). */
export type MeshAnswer = CommandAnswer & { plan?: MeshPlan };

export interface MeshClient {
  /** signs the command and has the controller decide it; with --plan, has it planned instead */
  execute(command: MeshCommand, metadata: CommandMetadata): Promise<MeshAnswer>;
  /** signs the commands and has the controller plan them in turn, appending nothing */
  plan(steps: readonly { command: MeshCommand; metadata: CommandMetadata }[]): Promise<MeshPlan>;
}

export interface MeshSession {
  config: MeshConfig;
  mesh: MeshClient;
  metadata: (commandId?: string) => CommandMetadata;
}

/** `--command-id`: it becomes part of the log's message id, so it has no whitespace and is at most 200 characters. */
const commandIdFlag = (value: string): string => {
  const parsed = commandMetadataSchema.shape.commandId.safeParse(value);
  if (!parsed.success) throw new ValidationError(`--command-id "${value.slice(0, 60)}" is refused: ${parsed.error.issues.map((i) => i.message).join('; ')}; it is part of the log's message id`, { field: '--command-id', value });
  return parsed.data;
};

/** A plan, as a command's answer: no sequence appended at, no events stored. */
const planAnswer = (plan: MeshPlan): MeshAnswer => ({ summary: plan.summaries.join('; '), seq: plan.seq, duplicate: false, events: [], plan });

/** `--plan` on a mutating verb (docs/decisions.md, "Plans"); declared with the verbs, which load nothing else. */
export { PLAN_OPTION } from './verbs.js';

/** With `plan`, every command the session sends is planned instead of carried out. */
export const withMesh = async <T>(work: (session: MeshSession) => Promise<T>, options: { plan?: boolean | undefined } = {}): Promise<T> => {
  const config = loadConfig();
  const nc = await connectAsOperator(config, 'mesh-cli');
  try {
    const settings = { stream: config.logStream, subjectPrefix: config.logSubjectPrefix };
    await verifyLogStream(await jetstreamManager(nc), settings, config.natsUrl);
    return await work({
      config,
      mesh: {
        execute: async (command, metadata) =>
          options.plan ? planAnswer(await sendSignedPlan(nc, config, [{ command, commandId: metadata.commandId }])) : sendSignedCommand(nc, config, command, metadata.commandId),
        plan: (steps) => sendSignedPlan(nc, config, steps.map(({ command, metadata }) => ({ command, commandId: metadata.commandId }))),
      },
      metadata: (commandId) => ({ commandId: commandId === undefined ? randomUUID() : commandIdFlag(commandId), actor: config.actor }),
    });
  } finally {
    await nc.close();
  }
};

export const printResult = (out: Output, result: MeshAnswer): number => {
  if (result.plan) return printPlan(out, result.plan);
  if (out.json) out.data({ ok: true, summary: result.summary, seq: result.seq, duplicate: result.duplicate, events: result.events });
  else out.line(`${result.summary}${result.events.length > 0 ? ` (log seq ${result.seq})` : ''}`);
  return 0;
};

export const runCommand = (out: Output, command: MeshCommand, commandId?: string, options: { plan?: boolean | undefined } = {}): Promise<number> =>
  withMesh(async ({ mesh, metadata }) => printResult(out, await mesh.execute(command, metadata(commandId))), options);
