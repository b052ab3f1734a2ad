import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { heldAt } from '../adapters/eventlog/chain-reader.js';
import type { EventLog } from '../adapters/eventlog/event-log.js';
import type { MeshEvent } from '../domain/registry.js';
import { assertLogStream, type LogStreamSettings } from '../adapters/eventlog/log-stream.js';
import { MeshInitialised, meshAggregate } from '../domain/mesh/events.js';
import { SYSTEM_SEATS } from '../domain/seats/system-seats.js';
import { RefusedError } from '../errors.js';
import { MeshService, type LogHold } from './mesh-service.js';

// What the control plane does first whenever it starts: assert the log's stream (it alone may),
// then make sure the log opens with the mesh's own first entry, which names the key the
// controller signs every commit with. Both idempotent. A log begun by another key, or before
// commits were signed, is refused: this writer cannot extend it. A log held at a commit that does
// not verify is not: the controller starts, serves reads and says where it is held.

export interface BootstrapResult {
  stream: { created: boolean; updated: string[] };
  genesis: { seq: number; appended: boolean };
  /** system seats defined by this start (ADR 0122: the mesh's own seats are data, defined at genesis) */
  seatsDefined: string[];
  /** the log holds readers at a commit; the system seats were not looked at */
  held?: LogHold;
}

type BootstrapSettings = LogStreamSettings & { meshName: string; actor: string; /** the public key of this process's writer */ controllerKey: string };

/** The stream asserted and the log begun: what must be true before anything follows the log. */
export const beginLog = async (nc: NatsConnection, log: EventLog<MeshEvent>, settings: BootstrapSettings): Promise<Omit<BootstrapResult, 'seatsDefined'>> => {
  const stream = await assertLogStream(await jetstreamManager(nc), settings);
  if ((await log.headSeq()) > 0 && !(await log.writerKey())) {
    throw new RefusedError(
      `the mesh log (stream ${settings.stream}) cannot be verified from its first commit: it names no writer key it is signed with. It was begun before commits were signed, or not by a mesh writer, and the control plane does not extend it: begin a new log (for the local stack: \`npx mesh dev down\`, remove its nats folder, \`npx mesh dev up\`).`,
      { stream: settings.stream },
    );
  }
  const aggregate = meshAggregate(settings.meshName);
  let history: Awaited<ReturnType<EventLog<MeshEvent>['readAggregate']>>;
  try {
    history = await log.readAggregate(aggregate);
  } catch (error) {
    // The mesh's own aggregate holds a commit that does not verify: start held, saying where.
    const at = heldAt(error);
    if (!at) throw error;
    return { stream, genesis: { seq: 0, appended: false }, held: { ...at, since: new Date() } };
  }
  const genesisEvent = history.events[0];
  if (genesisEvent) {
    const named = genesisEvent.type === MeshInitialised.type ? genesisEvent.data.controllerKey : undefined;
    if (named !== settings.controllerKey) {
      throw new RefusedError(
        `the mesh log (stream ${settings.stream}) was begun at seq ${genesisEvent.seq} by the controller with key ${named ?? '(none: before commits were signed)'}; this process holds key ${settings.controllerKey}. Only the controller a log began with appends to it: run it with that key (MESH_CONTROLLER_KEY).`,
        { stream: settings.stream, logKey: named, key: settings.controllerKey },
      );
    }
  }
  const genesis = genesisEvent
    ? { seq: genesisEvent.seq, appended: false }
    : await log
        .append(aggregate, [{ type: MeshInitialised.type, data: { mesh: settings.meshName, logStream: settings.stream, controllerKey: settings.controllerKey } }], 0, {
          commandId: `genesis:${settings.meshName}`,
          actor: settings.actor,
        })
        .then((result) => ({ seq: result.seq, appended: !result.duplicate }));
  return { stream, genesis };
};

/** The mesh's own seats, defined through the process's command service; returns those this start defined. */
export const defineSystemSeats = async (mesh: MeshService, settings: Pick<BootstrapSettings, 'meshName' | 'actor'>): Promise<{ seatsDefined: string[]; held?: LogHold }> => {
  const { held } = await mesh.view();
  if (held) return { seatsDefined: [], held };
  const seatsDefined: string[] = [];
  for (const seat of SYSTEM_SEATS) {
    const result = await mesh.execute({ type: 'define-system-seat', seat }, { commandId: `genesis:${settings.meshName}:seat:${seat.name}`, actor: settings.actor });
    if (result.events.length > 0) seatsDefined.push(seat.name);
  }
  return { seatsDefined };
};

/**
 * Both, for a process that runs no view of the mesh (dev tooling, tests): through `mesh` when it
 * has a command service already (one fold for the whole process), else one of its own.
 */
export const bootstrapControlPlane = async (nc: NatsConnection, log: EventLog<MeshEvent>, settings: BootstrapSettings, mesh?: MeshService): Promise<BootstrapResult> => {
  const begun = await beginLog(nc, log, settings);
  if (begun.held) return { ...begun, seatsDefined: [] };
  const seats = await defineSystemSeats(mesh ?? new MeshService(log), settings);
  return { ...begun, ...seats };
};
