import type { NatsConnection } from '@nats-io/nats-core';
import type pg from 'pg';
import type { MeshConfig } from '../config.js';
import { JetStreamEventLog } from '../adapters/eventlog/jetstream-log.js';
import { DeclarationPublisher } from '../controller/declaration-publisher.js';
import { overviewSource } from '../controller/http/overview-source.js';
import { MeshService } from '../controller/mesh-service.js';
import { statusSchemaFromEnv } from '../controller/node-status.js';
import { heartbeatThresholdMs, type Overview } from '../controller/overview.js';
import { meshEventRegistry } from '../domain/registry.js';

// What the machines are doing, for `mesh status` and `mesh node show`: the same judgement the
// controller's page makes — heard from when, which declaration applied, what is held, refused or
// crash-looping — read from the log, NODES and the controller's node status.

export const machineOverview = (nc: NatsConnection, db: pg.Pool, config: MeshConfig): Promise<Overview & { unknown: string[] }> =>
  overviewSource({
    mesh: new MeshService(new JetStreamEventLog(nc, { stream: config.logStream, subjectPrefix: config.logSubjectPrefix, registry: meshEventRegistry() })),
    publisher: new DeclarationPublisher(nc, { nodesStream: config.nodesStream, prefix: config.subjectPrefix }),
    pool: db,
    statusSchema: statusSchemaFromEnv(),
    heartbeatThresholdMs: heartbeatThresholdMs(),
  })();
