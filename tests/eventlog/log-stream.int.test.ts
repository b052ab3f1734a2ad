import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { jetstreamManager, StorageType, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { connectNats } from '../../src/adapters/nats/connect.js';
import { assertLogStream, desiredLogStreamConfig, verifyLogStream, type LogStreamSettings } from '../../src/adapters/eventlog/log-stream.js';
import { JetStreamEventLog } from '../../src/adapters/eventlog/jetstream-log.js';
import { LogWriter } from '../../src/adapters/eventlog/log-writer.js';
import { newIdentity } from '../../src/adapters/identity.js';
import type { MeshError } from '../../src/errors.js';
import { meta, testNatsUrl } from '../helpers/log.js';
import { uniqueName } from '../helpers/names.js';
import { testRegistry } from '../helpers/test-events.js';

describe('the LOG stream is asserted by the control plane and is append-only', () => {
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let settings: LogStreamSettings;
  beforeEach(async () => {
    nc = await connectNats(testNatsUrl(), { name: 'test-log-stream' });
    jsm = await jetstreamManager(nc);
    const name = uniqueName('s');
    settings = { stream: `LOG_${name}`, subjectPrefix: `${name}.log` };
  });
  afterEach(async () => {
    await jsm.streams.delete(settings.stream).catch(() => undefined);
    await nc.close();
  });

  it('creates the stream once; asserting again changes nothing', async () => {
    expect(await assertLogStream(jsm, settings)).toEqual({ created: true, updated: [] });
    expect(await assertLogStream(jsm, settings)).toEqual({ created: false, updated: [] });
    const info = await jsm.streams.info(settings.stream);
    expect(info.config).toMatchObject({ subjects: [`${settings.subjectPrefix}.>`], storage: StorageType.File, deny_delete: true, deny_purge: true, max_age: 0 });
  });

  it('refuses to delete or purge a message through the API', async () => {
    await assertLogStream(jsm, settings);
    const log = new JetStreamEventLog(nc, { ...settings, registry: testRegistry(), writer: new LogWriter(nc, { stream: settings.stream, key: newIdentity() }) });
    const { seq } = await log.append('counter.one', [{ type: 'test.counted', data: { n: 1 } }], 0, meta('c1'));
    await expect(jsm.streams.deleteMessage(settings.stream, seq)).rejects.toThrow();
    await expect(jsm.streams.purge(settings.stream)).rejects.toThrow();
    await expect(jsm.streams.purge(settings.stream, { filter: `${settings.subjectPrefix}.counter.one` })).rejects.toThrow();
    expect((await jsm.streams.info(settings.stream)).state.messages).toBe(1);
  });

  it('brings back settings that drifted, and names them', async () => {
    await jsm.streams.add({ ...desiredLogStreamConfig(settings), deny_delete: false, deny_purge: false, max_age: 3_600_000_000_000 });
    const result = await assertLogStream(jsm, settings);
    expect(result.updated.sort()).toEqual(['deny_delete', 'deny_purge', 'max_age']);
    expect((await jsm.streams.info(settings.stream)).config).toMatchObject({ deny_delete: true, deny_purge: true, max_age: 0 });
  });

  it('refuses a stream it cannot turn into the log in place, saying what is wrong', async () => {
    await jsm.streams.add({ ...desiredLogStreamConfig(settings), storage: StorageType.Memory });
    const refused = await assertLogStream(jsm, settings).catch((error: MeshError) => error);
    expect(refused).toMatchObject({ code: 'refused' });
    expect((refused as MeshError).message).toMatch(/storage="memory".*needs storage="file"/);
  });

  it('lets readers verify but never create: a missing log is reported with the way to create it', async () => {
    const missing = await verifyLogStream(jsm, settings, testNatsUrl()).catch((error: MeshError) => error);
    expect(missing).toMatchObject({ code: 'unavailable' });
    expect((missing as MeshError).message).toContain('npx mesh dev up');
    await expect(jsm.streams.info(settings.stream)).rejects.toThrow();
  });
});
