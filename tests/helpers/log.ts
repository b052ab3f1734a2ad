import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { projectRoot } from '../../src/config.js';
import { connectNats } from '../../src/adapters/nats/connect.js';
import { JetStreamEventLog, type JetStreamEventLogOptions } from '../../src/adapters/eventlog/jetstream-log.js';
import { assertLogStream, type LogStreamSettings } from '../../src/adapters/eventlog/log-stream.js';
import { uniqueName } from './names.js';
import { testRegistry } from './test-events.js';

export const testNatsUrl = (): string => {
  const url = process.env.MESH_NATS_URL;
  if (!url) throw new Error('MESH_NATS_URL is not set: the jest global setup starts the test stack and sets it');
  return url;
};

export interface TestLog {
  nc: NatsConnection;
  jsm: JetStreamManager;
  log: JetStreamEventLog;
  settings: LogStreamSettings;
  /** Another log over the same stream, as a second process would have (its own cache). */
  another: (overrides?: Partial<JetStreamEventLogOptions>) => JetStreamEventLog;
  /** Resolves once the connection has reconnected more times than `count`. */
  reconnected: (count: number) => Promise<void>;
  reconnects: () => number;
  close: () => Promise<void>;
}

/** A fresh log stream of the test's own, asserted as the control plane asserts LOG. */
export const openTestLog = async (
  options: { url?: string; duplicateWindowMs?: number; log?: Partial<JetStreamEventLogOptions> } = {},
): Promise<TestLog> => {
  const name = uniqueName('t');
  const settings: LogStreamSettings = {
    stream: `LOG_${name}`,
    subjectPrefix: `${name}.log`,
    ...(options.duplicateWindowMs ? { duplicateWindowMs: options.duplicateWindowMs } : {}),
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
  const make = (overrides: Partial<JetStreamEventLogOptions> = {}): JetStreamEventLog =>
    new JetStreamEventLog(nc, { ...settings, registry: testRegistry(), ...options.log, ...overrides });
  return {
    nc,
    jsm,
    log: make(),
    settings,
    another: make,
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

/** Publishes commits into the test's log exactly as given, past every check the log makes on append. */
export const publishRaw = async (t: TestLog, commits: readonly { subject: string; commit: unknown }[]): Promise<void> => {
  const js = jetstream(t.nc);
  for (const { subject, commit } of commits) await js.publish(`${t.settings.subjectPrefix}.${subject}`, JSON.stringify(commit));
};
