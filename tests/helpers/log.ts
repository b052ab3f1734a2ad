import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { projectRoot } from '../../src/config.js';
import { connectNats } from '../../src/adapters/nats/connect.js';
import { newIdentity, type Identity } from '../../src/adapters/identity.js';
import { JetStreamEventLog, type JetStreamEventLogOptions } from '../../src/adapters/eventlog/jetstream-log.js';
import { LogWriter, type LogWriterOptions } from '../../src/adapters/eventlog/log-writer.js';
import { assertLogStream, type LogStreamSettings } from '../../src/adapters/eventlog/log-stream.js';
import { clusterSizeFrom, streamReplicas } from '../../src/adapters/nats/replicas.js';
import { uniqueName } from './names.js';
import { testRegistry } from './test-events.js';

/** Copies of each stream on the test stack's bus: 3 when it is a cluster (MESH_TEST_NATS_CLUSTER=3), else 1. */
export const testReplicas = (): number => streamReplicas(clusterSizeFrom(process.env.MESH_NATS_CLUSTER_SIZE));

export const testNatsUrl = (): string => {
  const url = process.env.MESH_NATS_URL;
  if (!url) throw new Error('MESH_NATS_URL is not set: the jest global setup starts the test stack and sets it');
  return url;
};

/** What another log over the test's stream may differ in: its own options, and its own writer's. */
export type LogOverrides = Partial<JetStreamEventLogOptions> & Partial<Pick<LogWriterOptions, 'publish' | 'timeoutMs'>>;

export interface TestLog {
  nc: NatsConnection;
  jsm: JetStreamManager;
  log: JetStreamEventLog;
  settings: LogStreamSettings;
  /** the log's writer key: every commit the test appends is signed with it */
  key: Identity;
  /** the writer `log` appends through */
  writer: LogWriter;
  /** Another log over the same stream, as a second process would have (its own cache, its own writer with the same key). */
  another: (overrides?: LogOverrides) => JetStreamEventLog;
  /** Resolves once the connection has reconnected more times than `count`. */
  reconnected: (count: number) => Promise<void>;
  reconnects: () => number;
  close: () => Promise<void>;
}

/** A fresh log stream of the test's own, asserted as the control plane asserts LOG. */
export const openTestLog = async (
  options: { url?: string; duplicateWindowMs?: number; log?: Partial<JetStreamEventLogOptions>; replicas?: number } = {},
): Promise<TestLog> => {
  const name = uniqueName('t');
  const settings: LogStreamSettings = {
    stream: `LOG_${name}`,
    subjectPrefix: `${name}.log`,
    ...(options.duplicateWindowMs ? { duplicateWindowMs: options.duplicateWindowMs } : {}),
    // On the test stack's bus, at the replicas its size gives; a scratch server is one server.
    ...(options.replicas ? { replicas: options.replicas } : options.url ? {} : { replicas: testReplicas() }),
  };
  const nc = await connectNats(options.url ?? testNatsUrl(), { name: `test-${name}`, persistent: true });
  let reconnects = 0;
  const waiting: { count: number; resolve: () => void }[] = [];
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type !== 'reconnect') continue;
      reconnects++;
      for (const w of waiting.filter((w) => reconnects > w.count)) w.resolve();
    }
  })();
  const jsm = await jetstreamManager(nc);
  await assertLogStream(jsm, settings);
  const key = newIdentity();
  const writer = new LogWriter(nc, { stream: settings.stream, key, keySource: 'the test log' });
  const make = ({ publish, timeoutMs, ...overrides }: LogOverrides = {}, own = true): JetStreamEventLog =>
    new JetStreamEventLog(nc, {
      ...settings,
      registry: testRegistry(),
      ...options.log,
      writer: own ? new LogWriter(nc, { stream: settings.stream, key, keySource: 'the test log', ...(publish ? { publish } : {}), ...(timeoutMs ? { timeoutMs } : {}) }) : writer,
      ...overrides,
    });
  return {
    nc,
    jsm,
    log: make({}, false),
    settings,
    key,
    writer,
    another: (overrides) => make(overrides),
    reconnects: () => reconnects,
    reconnected: (count) => (reconnects > count ? Promise.resolve() : new Promise((resolve) => waiting.push({ count, resolve }))),
    close: async () => {
      // The log denies purges and message deletes, not the stream's removal: tests clean up after themselves.
      await jsm.streams.delete(settings.stream).catch(() => undefined);
      await nc.close();
    },
  };
};

export const meta = (commandId: string, actor = 'test') => ({ commandId, actor });

export const collect = async <T>(iterable: AsyncIterable<T>): Promise<T[]> => {
  const items: T[] = [];
  for await (const item of iterable) items.push(item);
  return items;
};

/** One line of a frozen log (fixtures/event-logs): a commit as it was stored, and its subject under the prefix. */
export interface FrozenCommit {
  subject: string;
  commit: { firstVersion: number; events: (Record<string, unknown> & { type: string; schemaVersion: number })[] };
}

export const readFrozen = (file: string): FrozenCommit[] =>
  readFileSync(join(projectRoot, 'fixtures', 'event-logs', file), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as FrozenCommit);

/**
 * Stores commits into the test's log with their bodies exactly as given, past every check the log
 * makes on append: a frozen log as it was once stored. Each is signed and chained by the test
 * log's writer, as every commit of a log is.
 */
export const publishRaw = async (t: Pick<TestLog, 'writer' | 'settings'>, commits: readonly { subject: string; commit: unknown }[]): Promise<void> => {
  for (const { subject, commit } of commits) {
    await t.writer.write({ subject: `${t.settings.subjectPrefix}.${subject}`, payload: new TextEncoder().encode(JSON.stringify(commit)), msgID: randomUUID() });
  }
};
