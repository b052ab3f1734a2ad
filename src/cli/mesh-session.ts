import { randomUUID } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { errors as natsErrors, type NatsConnection } from '@nats-io/nats-core';
import { loadConfig, type MeshConfig } from '../config.js';
import { connectNats } from '../adapters/nats/connect.js';
import { JetStreamEventLog } from '../adapters/eventlog/jetstream-log.js';
import { verifyLogStream } from '../adapters/eventlog/log-stream.js';
import { loadOperatorKey, signCommand } from '../adapters/operator-keys.js';
import { MeshService, type CommandResult } from '../controller/mesh-service.js';
import { toolSubject, type ToolAnswer } from '../controller/tool-server.js';
import type { CommandMetadata, StoredEvent } from '../domain/events/envelope.js';
import type { MeshCommand } from '../domain/mesh/commands.js';
import type { MeshState } from '../domain/mesh/state.js';
import { Refusal } from '../domain/refusal.js';
import { meshEventRegistry } from '../domain/registry.js';
import { MeshError, UnavailableError, type MeshErrorCode } from '../errors.js';
import type { Output } from './output.js';

// One CLI invocation's view of the mesh. Reads fold the log here; commands are signed with the
// operator's key and sent to the controller as the mesh-controller seat's tools, which verify and
// decide them (a request is never persisted; the events it causes are).

export interface MeshClient {
  /** the mesh as the log says it is now, folded locally */
  current(): Promise<MeshState>;
  /** signs the command and has the controller decide it */
  execute(command: MeshCommand, metadata: CommandMetadata): Promise<CommandResult>;
}

export interface MeshSession {
  config: MeshConfig;
  mesh: MeshClient;
  metadata: (commandId?: string) => CommandMetadata;
}

const COMMAND_TIMEOUT_MS = 30_000;

const sendSigned = async (nc: NatsConnection, config: MeshConfig, command: MeshCommand, commandId: string): Promise<CommandResult> => {
  const key = loadOperatorKey(config.operatorKeyFile);
  const signed = signCommand(key, commandId, command as unknown as Record<string, unknown>, new Date());
  const subject = toolSubject(command.type, config.subjectPrefix);
  let answer: ToolAnswer;
  try {
    const reply = await nc.request(subject, JSON.stringify(signed), { timeout: COMMAND_TIMEOUT_MS });
    answer = JSON.parse(reply.string()) as ToolAnswer;
  } catch (error) {
    const noController = error instanceof natsErrors.RequestError && error.isNoResponders();
    throw new UnavailableError(
      noController
        ? `no controller answers ${subject}: is the control plane running? (npx mesh dev up)`
        : `the controller did not answer ${command.type} in ${COMMAND_TIMEOUT_MS / 1000} s; it may still be carried out — run the same command again with --command-id ${commandId} to learn its outcome without repeating it`,
      { subject, commandId },
      { cause: error },
    );
  }
  if (answer.ok) return { summary: answer.summary, seq: answer.seq, duplicate: answer.duplicate, events: answer.events as StoredEvent[] };
  const { code, ...details } = answer.error;
  if (code === 'refused' && answer.refused.length > 0) throw new Refusal(typeof details.subject === 'string' ? details.subject : command.type, answer.refused);
  throw new MeshError(code as MeshErrorCode, answer.refused.map((r) => r.why).join('; '), details);
};

export const withMesh = async <T>(work: (session: MeshSession) => Promise<T>): Promise<T> => {
  const config = loadConfig();
  const nc = await connectNats(config.natsUrl, { name: 'mesh-cli' });
  try {
    const settings = { stream: config.logStream, subjectPrefix: config.logSubjectPrefix };
    await verifyLogStream(await jetstreamManager(nc), settings, config.natsUrl);
    const reads = new MeshService(new JetStreamEventLog(nc, { ...settings, registry: meshEventRegistry() }));
    return await work({
      config,
      mesh: { current: () => reads.current(), execute: (command, metadata) => sendSigned(nc, config, command, metadata.commandId) },
      metadata: (commandId) => ({ commandId: commandId ?? randomUUID(), actor: config.actor }),
    });
  } finally {
    await nc.close();
  }
};

export const printResult = (out: Output, result: CommandResult): number => {
  if (out.json) out.data({ ok: true, summary: result.summary, seq: result.seq, duplicate: result.duplicate, events: result.events });
  else out.line(`${result.summary}${result.events.length > 0 ? ` (log seq ${result.seq})` : ''}`);
  return 0;
};

export const runCommand = (out: Output, command: MeshCommand, commandId?: string): Promise<number> =>
  withMesh(async ({ mesh, metadata }) => printResult(out, await mesh.execute(command, metadata(commandId))));
