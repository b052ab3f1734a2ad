import {
  DiscardPolicy,
  JetStreamApiError,
  RetentionPolicy,
  StorageType,
  type JetStreamManager,
  type StreamConfig,
  type StreamInfo,
} from '@nats-io/jetstream';
import { RefusedError, UnavailableError } from '../../errors.js';

// The LOG stream's settings are the control plane's to assert, and only the control plane's:
// readers verify and refuse, they never create or change it. The log is append-only: no message
// can be deleted or purged through the API, nothing expires, nothing rolls up.

export interface LogStreamSettings {
  stream: string;
  subjectPrefix: string;
  replicas?: number;
  /** The server's Nats-Msg-Id window: a fast path for retries, never the only guard. */
  duplicateWindowMs?: number;
}

const NANOS_PER_MS = 1_000_000;
export const DEFAULT_DUPLICATE_WINDOW_MS = 2 * 60 * 1000;

export const desiredLogStreamConfig = (settings: LogStreamSettings): Partial<StreamConfig> & { name: string } => ({
  name: settings.stream,
  description: 'The mesh log: every mesh change, one subject per aggregate. Append-only.',
  subjects: [`${settings.subjectPrefix}.>`],
  retention: RetentionPolicy.Limits,
  storage: StorageType.File,
  num_replicas: settings.replicas ?? 1,
  max_age: 0,
  max_msgs: -1,
  max_bytes: -1,
  max_msgs_per_subject: -1,
  discard: DiscardPolicy.New,
  duplicate_window: (settings.duplicateWindowMs ?? DEFAULT_DUPLICATE_WINDOW_MS) * NANOS_PER_MS,
  deny_delete: true,
  deny_purge: true,
  allow_rollup_hdrs: false,
});

/** Settings that decide whether the log is the log; each must match exactly. */
const MUST_MATCH = ['retention', 'storage', 'max_age', 'max_msgs', 'max_bytes', 'max_msgs_per_subject', 'deny_delete', 'deny_purge', 'allow_rollup_hdrs'] as const;
/** Settings an existing stream cannot change in place; a mismatch is refused, never papered over. */
const IMMUTABLE = new Set<string>(['retention', 'storage']);

const isStreamNotFound = (error: unknown): boolean => error instanceof JetStreamApiError && error.code === 10059;

export interface LogStreamDrift {
  field: string;
  actual: unknown;
  wanted: unknown;
}

export const logStreamDrift = (info: StreamInfo, settings: LogStreamSettings): LogStreamDrift[] => {
  const wanted = desiredLogStreamConfig(settings);
  const drift: LogStreamDrift[] = [];
  for (const field of MUST_MATCH) {
    const actual = info.config[field] ?? false;
    if (actual !== wanted[field]) drift.push({ field, actual, wanted: wanted[field] });
  }
  const subjects = info.config.subjects ?? [];
  if (subjects.length !== 1 || subjects[0] !== wanted.subjects?.[0]) drift.push({ field: 'subjects', actual: subjects, wanted: wanted.subjects });
  if (info.config.duplicate_window !== wanted.duplicate_window) {
    drift.push({ field: 'duplicate_window', actual: info.config.duplicate_window, wanted: wanted.duplicate_window });
  }
  if (info.config.num_replicas !== wanted.num_replicas) drift.push({ field: 'num_replicas', actual: info.config.num_replicas, wanted: wanted.num_replicas });
  return drift;
};

/**
 * Creates the LOG stream or brings its settings to what the log needs. Idempotent: a stream that
 * already matches is left alone. Returns what changed.
 */
export const assertLogStream = async (jsm: JetStreamManager, settings: LogStreamSettings): Promise<{ created: boolean; updated: string[] }> => {
  const wanted = desiredLogStreamConfig(settings);
  let info: StreamInfo;
  try {
    info = await jsm.streams.info(settings.stream);
  } catch (error) {
    if (!isStreamNotFound(error)) throw error;
    try {
      await jsm.streams.add(wanted);
      return { created: true, updated: [] };
    } catch (addError) {
      // Two control planes starting at once: the other one created it; verify it as usual.
      if (!(addError instanceof JetStreamApiError) || addError.code !== 10058) throw addError;
      info = await jsm.streams.info(settings.stream);
    }
  }
  const drift = logStreamDrift(info, settings);
  if (drift.length === 0) return { created: false, updated: [] };
  const immutable = drift.filter((d) => IMMUTABLE.has(d.field));
  if (immutable.length > 0) {
    throw new RefusedError(
      `stream ${settings.stream} exists with ${immutable.map((d) => `${d.field}=${JSON.stringify(d.actual)}`).join(', ')}; the mesh log needs ${immutable
        .map((d) => `${d.field}=${JSON.stringify(d.wanted)}`)
        .join(', ')}, which cannot be changed in place. Move the stream aside (its messages are the mesh's history) and restart the control plane.`,
      { stream: settings.stream, drift: immutable },
    );
  }
  try {
    await jsm.streams.update(settings.stream, { ...info.config, ...wanted });
  } catch (cause) {
    throw new RefusedError(
      `stream ${settings.stream} has ${drift.map((d) => d.field).join(', ')} unlike the mesh log, and the server refused to change them: ${(cause as Error).message}`,
      { stream: settings.stream, drift },
      { cause },
    );
  }
  return { created: false, updated: drift.map((d) => d.field) };
};

/** For readers: the stream must exist and be the log; they never create or change it. */
export const verifyLogStream = async (jsm: JetStreamManager, settings: LogStreamSettings, natsUrl: string): Promise<StreamInfo> => {
  let info: StreamInfo;
  try {
    info = await jsm.streams.info(settings.stream);
  } catch (error) {
    if (isStreamNotFound(error)) {
      throw new UnavailableError(
        `the mesh log (stream ${settings.stream}) does not exist on ${natsUrl}: the control plane creates it when it starts — run \`npx mesh dev up\``,
        { stream: settings.stream },
      );
    }
    throw error;
  }
  const drift = logStreamDrift(info, settings).filter((d) => d.field !== 'duplicate_window' && d.field !== 'num_replicas');
  if (drift.length > 0) {
    throw new RefusedError(
      `stream ${settings.stream} on ${natsUrl} is not the mesh log: ${drift.map((d) => `${d.field} is ${JSON.stringify(d.actual)}, not ${JSON.stringify(d.wanted)}`).join('; ')}`,
      { stream: settings.stream, drift },
    );
  }
  return info;
};
