import { AckPolicy, DeliverPolicy, DiscardPolicy, RetentionPolicy, StorageType, type JetStreamManager, type StreamConfig } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { Objm, type ObjectStore } from '@nats-io/obj';
import { nanos } from '@nats-io/nats-core';
import { SEAT_HOLDERS_CONSUMER, seatStreamName } from '../../domain/bus/subjects.js';
import { assertStream } from './assert-stream.js';

// The build machine's wire: its work queue (one stream per seat's `accept` branch, DESIGN.md
// decision 5), the one consumer its holders share, and the mesh's artifact store. Asserted by the
// control plane alone; a builder only binds to them.

export const BUILD_SEAT = 'mesh-build-machine';

export interface BuildWireNames {
  /** subject prefix: `mesh` in production; tests use their own */
  prefix: string;
  /** copies the bus keeps of the queue and the artifacts (streamReplicas): 1 when absent */
  replicas?: number;
}

export { seatStreamName };
export const jobsStreamName = (names: BuildWireNames): string => seatStreamName(names.prefix, BUILD_SEAT);
/** The consumer every holder of the seat pulls from: each job goes to exactly one of them. */
export const BUILDERS_CONSUMER = SEAT_HOLDERS_CONSUMER;
export const artifactBucketName = (names: BuildWireNames): string => (names.prefix === 'mesh' ? 'artifacts' : `artifacts_${names.prefix}`);

export const buildJobSubject = (prefix: string): string => `${prefix}.seat.${BUILD_SEAT}.accept.build`;
export const buildOutcomeSubject = (prefix: string, outcome: 'built' | 'failed'): string => `${prefix}.seat.${BUILD_SEAT}.event.${outcome}`;
/** Where a holder of a seat that hosts repositories says the base of its clone addresses: core request/reply. */
export const cloneBaseSubject = (prefix: string, seat: string): string => `${prefix}.seat.${seat}.tool.clone-base`;
/** Where a holder of the build seat says whether a module's folder is at a commit (core request/reply, one holder of the queue group answers). */
export const probeSubject = (prefix: string): string => `${prefix}.seat.${BUILD_SEAT}.tool.probe`;
/** The queue group the build seat's holders answer the probe in. */
export const PROBE_QUEUE = 'holders';

export const jobsStreamConfig = (names: BuildWireNames): Partial<StreamConfig> & { name: string } => ({
  name: jobsStreamName(names),
  description: `Work submitted to ${BUILD_SEAT}: kept until a holder acknowledges it.`,
  subjects: [`${names.prefix}.seat.${BUILD_SEAT}.accept.>`],
  retention: RetentionPolicy.Workqueue,
  storage: StorageType.File,
  discard: DiscardPolicy.Old,
  max_age: nanos(7 * 24 * 3_600_000),
  duplicate_window: nanos(120_000),
  num_replicas: names.replicas ?? 1,
});

export interface BuildWireOptions extends BuildWireNames {
  /** how long a holder may go without a sign of life before its job goes to another */
  ackWaitMs: number;
}

/** Creates or corrects the seat's stream, its holders' consumer and the artifact store. */
export const assertBuildWire = async (nc: NatsConnection, jsm: JetStreamManager, options: BuildWireOptions): Promise<ObjectStore> => {
  const config = jobsStreamConfig(options);
  await assertStream(jsm, config);
  const consumer = {
    durable_name: BUILDERS_CONSUMER,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: nanos(options.ackWaitMs),
    max_deliver: -1,
    filter_subject: buildJobSubject(options.prefix),
  };
  const existing = await jsm.consumers.info(config.name, BUILDERS_CONSUMER).catch(() => null);
  if (!existing) await jsm.consumers.add(config.name, consumer);
  else if (existing.config.ack_wait !== consumer.ack_wait) await jsm.consumers.update(config.name, BUILDERS_CONSUMER, { ack_wait: consumer.ack_wait });
  return new Objm(nc).create(artifactBucketName(options), { storage: StorageType.File, replicas: options.replicas ?? 1 });
};
