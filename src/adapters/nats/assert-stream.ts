import { JetStreamApiError, type JetStreamManager, type StreamConfig } from '@nats-io/jetstream';

// A stream of the control plane's own (not LOG, which has its own stricter assertion in
// src/adapters/eventlog/log-stream.ts): created when missing, its subjects and per-subject limit
// corrected when they drifted (and its replicas, when the config names them). Two processes
// asserting it at once both succeed.

export const assertStream = async (jsm: JetStreamManager, config: Partial<StreamConfig> & { name: string }): Promise<void> => {
  try {
    const info = await jsm.streams.info(config.name);
    const same =
      JSON.stringify(info.config.subjects) === JSON.stringify(config.subjects) &&
      info.config.max_msgs_per_subject === (config.max_msgs_per_subject ?? -1) &&
      (config.num_replicas === undefined || info.config.num_replicas === config.num_replicas);
    if (!same) await jsm.streams.update(config.name, { ...info.config, ...config });
  } catch (error) {
    if (!(error instanceof JetStreamApiError) || error.code !== 10059) throw error;
    await jsm.streams.add(config).catch((addError: unknown) => {
      if (!(addError instanceof JetStreamApiError) || addError.code !== 10058) throw addError;
    });
  }
};
