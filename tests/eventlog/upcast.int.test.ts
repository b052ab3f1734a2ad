import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { JetStreamEventLog } from '../../src/adapters/eventlog/jetstream-log.js';
import { meshEventRegistry } from '../../src/domain/registry.js';
import type { MeshError } from '../../src/errors.js';
import { collect, openTestLog, publishRaw, readFrozen, type TestLog } from '../helpers/log.js';

describe('events stored at older schema versions', () => {
  let t: TestLog;
  beforeEach(async () => {
    t = await openTestLog();
  });
  afterEach(async () => t.close());

  it('reads a frozen v1 → v2 → v3 history as v3', async () => {
    await publishRaw(t, readFrozen('upcast-chain.jsonl'));
    const history = await t.log.readAggregate('person.ada');
    expect(history.version).toBe(3);
    expect(history.events.map((e) => [e.schemaVersion, e.data])).toEqual([
      [3, { first: 'Ada', last: 'King Lovelace', title: '' }],
      [3, { first: 'Ada', last: 'Lovelace', title: '' }],
      [3, { first: 'Ada', last: 'Lovelace', title: 'Countess' }],
    ]);
  });

  it("reads the mesh's own frozen events with the mesh's registry", async () => {
    await publishRaw(t, readFrozen('mesh-v1.jsonl'));
    const log = new JetStreamEventLog(t.nc, { ...t.settings, registry: meshEventRegistry() });
    const events = await collect(log.read());
    expect(events.map((e) => e.type)).toEqual(['mesh.initialised']);
  });

  it('refuses an unknown version and an unknown type, naming the sequence', async () => {
    const [first] = readFrozen('upcast-chain.jsonl');
    if (!first) throw new Error('fixture is empty');
    const event = first.commit.events[0] as Record<string, unknown>;
    await publishRaw(t, [{ subject: 'person.bob', commit: { firstVersion: 1, events: [{ ...event, aggregate: 'person.bob', schemaVersion: 4 }] } }]);
    await publishRaw(t, [{ subject: 'person.eve', commit: { firstVersion: 1, events: [{ ...event, aggregate: 'person.eve', type: 'test.vanished' }] } }]);

    const newer = await t.log.readAggregate('person.bob').catch((error: MeshError) => error);
    expect(newer).toMatchObject({ code: 'unknown_event', details: { type: 'test.renamed', schemaVersion: 4, seq: 1 } });
    const unknown = await collect(t.log.read({ fromSeq: 2 })).catch((error: MeshError) => error);
    expect(unknown).toMatchObject({ code: 'unknown_event', details: { type: 'test.vanished', seq: 2 } });
  });
});
