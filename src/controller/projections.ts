import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import type { EventLog } from '../adapters/eventlog/event-log.js';
import { ProjectionStalled, projectionAggregate } from '../domain/projections/events.js';
import { meshEventRegistry, type MeshEvent } from '../domain/registry.js';
import { ConcurrencyError } from '../errors.js';
import { meshProjections } from '../projections/catalogue.js';
import type { ProjectorSchemas } from '../projections/control.js';
import { Projector } from '../projections/projector.js';
import { type RunnerSettings, type StallReport } from '../projections/runner.js';

// The controller's projector: every mesh projection folded into PostgreSQL. The projector only
// reads the log; a stall it reports is stated here, as a `projection.stalled` fact, once per
// projection, version and sequence — the command id says which, so a retried or repeated report
// appends nothing new.

export interface MeshProjectorSetup {
  nc: NatsConnection;
  log: EventLog;
  databaseUrl: string;
  source: { stream: string; subjectPrefix: string };
  schemas: ProjectorSchemas;
  actor: string;
  logger: Logger;
  signal: AbortSignal;
  /** subject prefix of the seat events the stall is published on, for any consumer (ADR 0134) */
  prefix?: string;
  /** how the builds retry and batch; MESH_PROJECTION_RETRY_MAX_MS and the defaults when absent */
  settings?: Partial<RunnerSettings>;
}

const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });

export const stallCommandId = (stall: Pick<StallReport, 'projection' | 'version' | 'seq'>): string => `projection-stalled:${stall.projection}:v${stall.version}:${stall.seq}`;

/** Appends the stall as a fact unless the log holds it already; retried while the log is unreachable. */
export const stateStall = async (setup: Pick<MeshProjectorSetup, 'log' | 'actor' | 'logger' | 'signal'> & Partial<Pick<MeshProjectorSetup, 'nc' | 'prefix'>>, stall: StallReport): Promise<void> => {
  const aggregate = projectionAggregate(stall.projection);
  const commandId = stallCommandId(stall);
  const data = { projection: stall.projection, version: stall.version, seq: stall.seq, eventType: stall.type, sqlstate: stall.sqlstate ?? null, error: stall.error };
  for (let attempt = 1; !setup.signal.aborted; attempt++) {
    try {
      const history = await setup.log.readAggregate(aggregate);
      if (history.events.some((e) => e.commandId === commandId)) return;
      const result = await setup.log.append(aggregate, [{ type: ProjectionStalled.type, data }], history.version, { commandId, actor: setup.actor });
      // Stated under the controller's seat like every other fact; the log holds it either way.
      if (setup.nc && setup.prefix) {
        for (const event of result.events) {
          await jetstream(setup.nc)
            .publish(`${setup.prefix}.seat.mesh-controller.event.stalled`, JSON.stringify(event), { msgID: event.id })
            .catch((error: unknown) => setup.logger.warn({ err: error }, 'the stall fact is in the log but could not be published on EVENTS'));
        }
      }
      return;
    } catch (error) {
      // Another fact about this projection landed in between: read again. Anything else: wait and retry.
      if (!(error instanceof ConcurrencyError)) {
        setup.logger.warn({ err: error, projection: stall.projection, seq: stall.seq, attempt }, 'could not record the projection stall in the log yet; retrying');
        await sleep(Math.min(250 * 2 ** attempt, 30_000), setup.signal);
      }
    }
  }
};

/**
 * Starts the projector, and keeps trying while PostgreSQL is unreachable: the controller's other
 * work (declarations) does not wait for it. Resolves with the running projector, or undefined if
 * stopped first.
 */
export const runMeshProjector = async (setup: MeshProjectorSetup): Promise<Projector<MeshEvent> | undefined> => {
  const logger = setup.logger.child({ component: 'projector' });
  for (let attempt = 1; !setup.signal.aborted; attempt++) {
    const projector = new Projector({
      databaseUrl: setup.databaseUrl,
      nc: setup.nc,
      log: { ...setup.source, registry: meshEventRegistry() },
      projections: meshProjections(),
      schemas: setup.schemas,
      logger,
      onStall: (stall) => void stateStall(setup, stall),
      ...(setup.settings ? { settings: setup.settings } : {}),
    });
    try {
      await projector.start();
      return projector;
    } catch (error) {
      await projector.stop().catch(() => undefined);
      logger.warn({ err: error, attempt }, 'cannot start the projector (is PostgreSQL up?); retrying');
      await sleep(Math.min(1_000 * attempt, 10_000), setup.signal);
    }
  }
  return undefined;
};

/** The projector as one part of a process: started in the background (it waits for PostgreSQL), stopped with the process. */
export const startMeshProjector = (setup: Omit<MeshProjectorSetup, 'signal'>): { stop(): Promise<void> } => {
  const abort = new AbortController();
  const running = runMeshProjector({ ...setup, signal: abort.signal });
  let stopped: Promise<void> | undefined;
  return {
    // Once, however often asked: a process and its tests may both stop it.
    stop: () =>
      (stopped ??= (async () => {
        abort.abort();
        await (await running)?.stop();
      })()),
  };
};
