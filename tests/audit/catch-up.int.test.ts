import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { jetstream } from '@nats-io/jetstream';
import { pino } from 'pino';
import { catchUpAndFollow, followFacts, positionOf, type HeardFact } from '../../src/adapters/facts/fact-follower.js';
import { eventsStreamName } from '../../src/adapters/nats/control-streams.js';
import { CatchUpTool } from '../../src/controller/catch-up-tool.js';
import type { StoredEvent } from '../../src/domain/events/envelope.js';
import { catchUpToolSubject, START, type CatchUpPage, type FactPosition } from '../../src/domain/facts/catch-up.js';
import { FactApplied, factAggregate, factSubject } from '../../src/domain/facts/events.js';
import { openTestMesh, waitFor, type TestMesh } from '../helpers/test-mesh.js';

// A consumer of the facts that was away gets back exactly what it missed, in order, once: through
// its durable consumer on EVENTS, or by subscribing and then asking the catch-up tool. A fact
// stated while it catches up is neither lost nor doubled; asking again adds nothing anywhere.

describe('catch-up for a consumer of the facts', () => {
  let t: TestMesh;
  let stated = 0;
  let tool: CatchUpTool;

  /** What the report ingester does with a fact: into the log, then onto EVENTS. */
  const stateFact = async (): Promise<StoredEvent> => {
    const aggregate = factAggregate('lab1');
    const version = (await t.log.readAggregate(aggregate)).version;
    const n = ++stated;
    const result = await t.log.append(aggregate, [{ type: FactApplied.type, data: { node: 'lab1', module: `m${n}`, declarationSequence: n, version: { definitionVersion: 1, artifact: null }, previous: null } }], version, {
      commandId: `fact-${n}`,
      actor: 'controller',
    });
    const fact = result.events[0] as StoredEvent;
    await jetstream(t.nc).publish(factSubject(fact.type, t.names.prefix), JSON.stringify(fact), { msgID: fact.id });
    return fact;
  };
  const eventsHead = async () => (await t.jsm.streams.info(eventsStreamName({ nodes: '', control: '', prefix: t.names.prefix }))).state.last_seq;

  beforeAll(async () => {
    t = await openTestMesh();
    await t.startController(); // asserts EVENTS for this mesh's prefix
    tool = new CatchUpTool(t.nc, t.log, { prefix: t.names.prefix, logger: pino({ level: 'silent' }) });
    tool.start();
  });
  afterAll(async () => {
    tool.stop();
    await t.close();
  });

  it('subscribes, asks, and hears exactly the ten facts stated while it was away, one of them during its catch-up', async () => {
    // It was here once: it holds the position of the first fact.
    const first = await stateFact();
    const held: FactPosition = positionOf(first);

    // Away: nine facts are stated; the tenth comes while it is catching up.
    const missed: StoredEvent[] = [];
    for (let i = 0; i < 9; i++) missed.push(await stateFact());
    const heard: HeardFact[] = [];
    const abort = new AbortController();
    let duringCatchUp: Promise<StoredEvent> | undefined;
    const consuming = (async () => {
      for await (const item of catchUpAndFollow(t.nc, {
        prefix: t.names.prefix,
        asker: 'catalogue',
        after: held,
        pageSize: 4,
        signal: abort.signal,
        onPage: async () => {
          duringCatchUp ??= stateFact();
          await duringCatchUp;
        },
      })) {
        heard.push(item);
        if (heard.length === 10) abort.abort();
      }
    })();
    await consuming;
    const tenth = await (duringCatchUp as Promise<StoredEvent>);
    missed.push(tenth);
    expect(heard.map((h) => h.fact.id)).toEqual(missed.map((f) => f.id));
    expect(heard.slice(0, 9).every((h) => h.replayed)).toBe(true);

    // Nothing more comes for it: the tenth was in the answer or heard live, not both.
    const again: HeardFact[] = [];
    const abortAgain = new AbortController();
    const rest = (async () => {
      for await (const item of catchUpAndFollow(t.nc, { prefix: t.names.prefix, asker: 'catalogue', after: positionOf(tenth), signal: abortAgain.signal })) again.push(item);
    })();
    const eleventh = await stateFact();
    await waitFor('the next fact, live', async () => again.length === 1);
    abortAgain.abort();
    await rest;
    expect(again.map((h) => [h.fact.id, h.replayed])).toEqual([[eleventh.id, false]]);
  });

  it('answers the same question the same way and records nothing: a replay is not news', async () => {
    const ask = async (): Promise<CatchUpPage<StoredEvent>> =>
      (await t.nc.request(catchUpToolSubject(t.names.prefix), JSON.stringify({ asker: 'twice', after: START }), { timeout: 10_000 })).json<CatchUpPage<StoredEvent>>();
    const logHead = await t.log.headSeq();
    const events = await eventsHead();
    const once = await ask();
    const twice = await ask();
    expect(twice.facts.map((f) => f.id)).toEqual(once.facts.map((f) => f.id));
    expect(once.facts.length).toBe(stated);
    expect(await t.log.headSeq()).toBe(logHead);
    expect(await eventsHead()).toBe(events);
    const refused = (await t.nc.request(catchUpToolSubject(t.names.prefix), JSON.stringify({ after: 3 }), { timeout: 10_000 })).json<{ ok: boolean }>();
    expect(refused.ok).toBe(false);
  });

  it('resumes a durable consumer from its own position: the ten stated while it was stopped, in order, once', async () => {
    const stream = eventsStreamName({ nodes: '', control: '', prefix: t.names.prefix });
    const name = 'audit-durable';
    const heard: StoredEvent[] = [];
    const run = async (until: number, after?: FactPosition): Promise<void> => {
      const abort = new AbortController();
      for await (const fact of followFacts(t.nc, { prefix: t.names.prefix, stream, name, signal: abort.signal, ...(after ? { after } : {}) })) {
        heard.push(fact);
        if (heard.length >= until) abort.abort();
      }
    };
    await run(stated);
    const before = heard.length;
    const missed: StoredEvent[] = [];
    for (let i = 0; i < 10; i++) missed.push(await stateFact());
    await run(before + 10, positionOf(heard.at(-1) as StoredEvent));
    expect(heard.slice(before).map((f) => f.id)).toEqual(missed.map((f) => f.id));
  });
});
