import { randomUUID } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { loadConfig, type MeshConfig } from '../config.js';
import { connectAsOperator } from './bus-connection.js';
import { verifyLogStream } from '../adapters/eventlog/log-stream.js';
import { sendSignedCommand, type CommandAnswer } from '../adapters/command-client.js';
import { commandMetadataSchema, type CommandMetadata } from '../domain/events/envelope.js';
import { ValidationError } from '../errors.js';
import type { MeshCommand } from '../domain/mesh/commands.js';
import type { Output } from './output.js';

// One CLI invocation's way to command the mesh: commands are signed with the operator's key and
// sent to the controller as the mesh-controller seat's tools, which verify and decide them (a
// request is never persisted; the events it causes are). Reads never fold the log here: they read
// the projections (reads.ts).

export interface MeshClient {
  /** signs the command and has the controller decide it */
  execute(command: MeshCommand, metadata: CommandMetadata): Promise<CommandAnswer>;
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

export const withMesh = async <T>(work: (session: MeshSession) => Promise<T>): Promise<T> => {
  const config = loadConfig();
  const nc = await connectAsOperator(config, 'mesh-cli');
  try {
    const settings = { stream: config.logStream, subjectPrefix: config.logSubjectPrefix };
    await verifyLogStream(await jetstreamManager(nc), settings, config.natsUrl);
    return await work({
      config,
      mesh: { execute: (command, metadata) => sendSignedCommand(nc, config, command, metadata.commandId) },
      metadata: (commandId) => ({ commandId: commandId === undefined ? randomUUID() : commandIdFlag(commandId), actor: config.actor }),
    });
  } finally {
    await nc.close();
  }
};

export const printResult = (out: Output, result: CommandAnswer): number => {
  if (out.json) out.data({ ok: true, summary: result.summary, seq: result.seq, duplicate: result.duplicate, events: result.events });
  else out.line(`${result.summary}${result.events.length > 0 ? ` (log seq ${result.seq})` : ''}`);
  return 0;
};

export const runCommand = (out: Output, command: MeshCommand, commandId?: string): Promise<number> =>
  withMesh(async ({ mesh, metadata }) => printResult(out, await mesh.execute(command, metadata(commandId))));
