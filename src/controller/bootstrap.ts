import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import type { EventLog } from '../adapters/eventlog/event-log.js';
import { assertLogStream, type LogStreamSettings } from '../adapters/eventlog/log-stream.js';
import { MeshInitialised, meshAggregate } from '../domain/mesh/events.js';
import { SYSTEM_SEATS } from '../domain/seats/system-seats.js';
import { MeshService } from './mesh-service.js';

// What the control plane does first whenever it starts: assert the log's stream (it alone may),
// then make sure the log opens with the mesh's own first entry. Both idempotent.

export interface BootstrapResult {
  stream: { created: boolean; updated: string[] };
  genesis: { seq: number; appended: boolean };
  /** system seats defined by this start (ADR 0122: the mesh's own seats are data, defined at genesis) */
  seatsDefined: string[];
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
  const genesis = first
    ? { seq: first.seq, appended: false }
    : await log
        .append(aggregate, [{ type: MeshInitialised.type, data: { mesh: settings.meshName, logStream: settings.stream } }], 0, {
          commandId: `genesis:${settings.meshName}`,
          actor: settings.actor,
        })
        .then((result) => ({ seq: result.seq, appended: !result.duplicate }));
  const mesh = new MeshService(log);
  const seatsDefined: string[] = [];
  for (const seat of SYSTEM_SEATS) {
    const result = await mesh.execute({ type: 'define-system-seat', seat }, { commandId: `genesis:${settings.meshName}:seat:${seat.name}`, actor: settings.actor });
    if (result.events.length > 0) seatsDefined.push(seat.name);
  }
  return { stream, genesis, seatsDefined };
};
