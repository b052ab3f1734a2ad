import { DiscardPolicy, RetentionPolicy, StorageType, type JetStreamManager, type StreamConfig } from '@nats-io/jetstream';
import { assertStream } from './assert-stream.js';

// The control plane's other streams, asserted (created or corrected) by the control plane alone:
// NODES keeps each node's newest declaration; CONTROL carries what nodes say to the controller.

export interface ControlStreamNames {
  nodes: string;
  control: string;
  /** modules' and seats' events; defaults to EVENTS (with the prefix's name when not `mesh`) */
  events?: string;
  /** subject prefix: `mesh` in production; tests use their own */
  prefix: string;
  /** copies the bus keeps of each (streamReplicas): 1 when absent */
  replicas?: number;
}

export const DEFAULT_CONTROL_STREAMS: ControlStreamNames = { nodes: 'NODES', control: 'CONTROL', prefix: 'mesh' };

export const nodesStreamConfig = (names: ControlStreamNames): Partial<StreamConfig> & { name: string } => ({
  name: names.nodes,
  description: "Each node's current declaration: state, the newest only.",
  subjects: [`${names.prefix}.node.*.declare`],
  retention: RetentionPolicy.Limits,
  storage: StorageType.File,
  max_msgs_per_subject: 1,
  discard: DiscardPolicy.Old,
  allow_direct: true,
  num_replicas: names.replicas ?? 1,
});

export const controlStreamConfig = (names: ControlStreamNames): Partial<StreamConfig> & { name: string } => ({
  name: names.control,
  description: 'What nodes say to the control plane; only the controller reads it.',
  subjects: [`${names.prefix}.control.*.report`, `${names.prefix}.control.enrol`],
  retention: RetentionPolicy.Workqueue,
  storage: StorageType.File,
  discard: DiscardPolicy.Old,
  num_replicas: names.replicas ?? 1,
});

export const eventsStreamName = (names: ControlStreamNames): string => names.events ?? (names.prefix === 'mesh' ? 'EVENTS' : `EVENTS_${names.prefix}`);

/** Modules' and seats' events (DESIGN.md decision 5), kept for a while for consumers that were away. */
export const eventsStreamConfig = (names: ControlStreamNames): Partial<StreamConfig> & { name: string } => ({
  name: eventsStreamName(names),
  description: "Modules' and seats' events, for any consumer.",
  subjects: [`${names.prefix}.mod.*.event.>`, `${names.prefix}.seat.*.event.>`],
  retention: RetentionPolicy.Limits,
  storage: StorageType.File,
  max_age: 90 * 24 * 3_600 * 1_000_000_000,
  discard: DiscardPolicy.Old,
  num_replicas: names.replicas ?? 1,
});

export const assertControlStreams = async (jsm: JetStreamManager, names: ControlStreamNames = DEFAULT_CONTROL_STREAMS): Promise<void> => {
  await assertStream(jsm, nodesStreamConfig(names));
  await assertStream(jsm, controlStreamConfig(names));
  await assertStream(jsm, eventsStreamConfig(names));
};
