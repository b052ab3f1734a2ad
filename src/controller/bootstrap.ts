import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import type { EventLog } from '../adapters/eventlog/event-log.js';
import { assertLogStream, type LogStreamSettings } from '../adapters/eventlog/log-stream.js';
import { MeshInitialised, meshAggregate } from '../domain/mesh/events.js';

// What the control plane does first whenever it starts: assert the log's stream (it alone may),
// then make sure the log opens with the mesh's own first entry. Both idempotent.

export interface BootstrapResult {
  stream: { created: boolean; updated: string[] };
  genesis: { seq: number; appended: boolean };
}

export const bootstrapControlPlane = async (
  nc: NatsConnection,
  log: EventLog,
  settings: LogStreamSettings & { meshName: string; actor: string },
): Promise<BootstrapResult> => {
  const stream = await assertLogStream(await jetstreamManager(nc), settings);
  const aggregate = meshAggregate(settings.meshName);
  const history = await log.readAggregate(aggregate);
  const first = history.events[0];
  if (first) return { stream, genesis: { seq: first.seq, appended: false } };
  const result = await log.append(
    aggregate,
    [{ type: MeshInitialised.type, data: { mesh: settings.meshName, logStream: settings.stream } }],
    0,
    { commandId: `genesis:${settings.meshName}`, actor: settings.actor },
  );
  return { stream, genesis: { seq: result.seq, appended: !result.duplicate } };
};
