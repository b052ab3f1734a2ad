// What audit and catch-up cost beside the raw JetStream read of the same messages, in one run on
// one server of its own:
//   - `mesh history` of a node with HISTORY events (its facts), among as many events of others:
//     p99 of the read over RUNS runs;
//   - catch-up of a consumer BEHIND facts behind: through the catch-up tool (pages read from the
//     log) and through a durable consumer on EVENTS — events per second.
//
//   npm run bench:audit       (HISTORY=10000 BEHIND=100000 RUNS=10 to change the shape)
//
// It starts a nats-server of its own with the dev stack's script, in .mesh/tmp, and removes it.

import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { DeliverPolicy, jetstream, jetstreamManager, RetentionPolicy, StorageType } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { pino } from 'pino';
import { meshHome } from '../src/config.js';
import { connectNats } from '../src/adapters/nats/connect.js';
import { encodeCommit } from '../src/adapters/eventlog/codec.js';
import { JetStreamEventLog } from '../src/adapters/eventlog/jetstream-log.js';
import { assertLogStream } from '../src/adapters/eventlog/log-stream.js';
import { catchUpAndFollow, followFacts } from '../src/adapters/facts/fact-follower.js';
import { readHistory } from '../src/cli/history.js';
import { CatchUpTool } from '../src/controller/catch-up-tool.js';
import type { Commit } from '../src/domain/events/envelope.js';
import { newIdentity } from '../src/adapters/identity.js';
import { ChainedPublisher } from './chained.js';
import { factSubject } from '../src/domain/facts/events.js';
import { meshEventRegistry } from '../src/domain/registry.js';
import { startNatsServer, stopNatsServer } from '../src/dev/nats-server.js';
import { freePort } from '../src/dev/ports.js';

const HISTORY = Number(process.env.HISTORY ?? 10_000);
const BEHIND = Number(process.env.BEHIND ?? 100_000);
const RUNS = Number(process.env.RUNS ?? 10);
const WINDOW = 512;
const TIME = '2026-12-02T14:36:00.049Z';

const fact = (node: string, n: number, seq = 0) => ({
  id: `f-${node}-${n}`,
  type: 'fact.applied',
  schemaVersion: 1,
  aggregate: `fact.${node}`,
  time: TIME,
  actor: 'controller',
  commandId: `report:${node}:${n}`,
  causationId: `report:${node}:${n}`,
  correlationId: `report:${node}:${n}`,
  data: { node, module: 'greeter', declarationSequence: n, version: { definitionVersion: 1, artifact: null }, previous: null },
  ...(seq ? { seq, index: 0, version: n } : {}),
});

/** Stores `count` one-fact commits on fact.<node>, in order, WINDOW at a time, signed and chained: the log as the ingester leaves it. */
const storeFacts = async (log: ChainedPublisher, node: string, count: number): Promise<void> => {
  await log.publish(count, (i) => ({ subject: `mesh.log.fact.${node}`, payload: encodeCommit({ firstVersion: i + 1, events: [fact(node, i + 1)] } as Commit) }), WINDOW);
};

const seconds = async (work: () => Promise<unknown>): Promise<number> => {
  const started = process.hrtime.bigint();
  await work();
  return Number(process.hrtime.bigint() - started) / 1e9;
};

const p99 = (samples: number[]): number => [...samples].sort((a, b) => a - b)[Math.min(samples.length - 1, Math.ceil(samples.length * 0.99) - 1)] ?? 0;

/** The raw read: an ordered consumer over the same subjects, bytes only, to the head as it is now. */
const rawRead = async (nc: NatsConnection, stream: string, subject: string): Promise<number> => {
  const jsm = await jetstreamManager(nc);
  const last = await jsm.streams.getMessage(stream, { last_by_subj: subject }).catch(() => null);
  if (!last) return 0;
  const consumer = await jetstream(nc).consumers.get(stream, { filter_subjects: subject, deliver_policy: DeliverPolicy.All });
  const messages = await consumer.consume({ max_messages: 1024 });
  let count = 0;
  for await (const message of messages) {
    count++;
    if (message.seq >= last.seq) break;
  }
  messages.stop();
  return count;
};

const main = async (): Promise<void> => {
  const dir = join(meshHome(), 'tmp', `bench-audit-${process.pid}`);
  const server = { dir, port: await freePort() };
  const started = await startNatsServer(server);
  const nc = await connectNats(started.url, { name: 'bench-audit' });
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  const rows: [string, number, number, string][] = [];
  let tool: CatchUpTool | undefined;
  try {
    await assertLogStream(jsm, { stream: 'LOG', subjectPrefix: 'mesh.log' });
    await jsm.streams.add({ name: 'EVENTS', subjects: ['mesh.seat.*.event.>'], storage: StorageType.File, retention: RetentionPolicy.Limits });
    const log = new JetStreamEventLog(nc, { stream: 'LOG', subjectPrefix: 'mesh.log', registry: meshEventRegistry() });
    const chained = new ChainedPublisher(js, newIdentity());

    // 1. One node's history among as many events of another.
    await storeFacts(chained, 'lab1', HISTORY);
    await storeFacts(chained, 'other', HISTORY);
    const reads: number[] = [];
    const raws: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      let count = 0;
      reads.push(await seconds(async () => (count = (await readHistory(log, 'node.lab1')).length)));
      if (count !== HISTORY) throw new Error(`history read ${count} events, not ${HISTORY}`);
      raws.push(await seconds(() => rawRead(nc, 'LOG', 'mesh.log.fact.lab1')));
    }
    rows.push([`mesh history of a node with ${HISTORY} events, p99 over ${RUNS} runs`, p99(reads), p99(raws), 's']);

    // 2. A consumer BEHIND facts behind, through the catch-up tool.
    await storeFacts(chained, 'lab2', BEHIND - HISTORY * 2);
    tool = new CatchUpTool(nc, log, { prefix: 'mesh', logger: pino({ level: 'silent' }) });
    tool.start();
    const abort = new AbortController();
    let heard = 0;
    const toolTime = await seconds(async () => {
      for await (const item of catchUpAndFollow(nc, { prefix: 'mesh', asker: 'bench', signal: abort.signal, pageSize: 1_000, timeoutMs: 60_000 })) {
        if (item.replayed && ++heard === BEHIND) abort.abort();
      }
    });
    let rawCount = 0;
    const rawTime = await seconds(async () => (rawCount = await rawRead(nc, 'LOG', 'mesh.log.fact.>')));
    rows.push([`catch-up tool, ${heard} facts behind, events/s`, heard / toolTime, rawCount / rawTime, '/s']);

    // 3. The same, through a durable consumer on EVENTS.
    for (let from = 0; from < BEHIND; from += WINDOW) {
      const batch: Promise<unknown>[] = [];
      for (let n = from; n < Math.min(BEHIND, from + WINDOW); n++) batch.push(js.publish(factSubject('fact.applied'), JSON.stringify(fact('lab3', n + 1, n + 1))));
      await Promise.all(batch);
    }
    const durableAbort = new AbortController();
    let followed = 0;
    const durableTime = await seconds(async () => {
      for await (const _ of followFacts(nc, { prefix: 'mesh', stream: 'EVENTS', name: 'bench', signal: durableAbort.signal })) if (++followed === BEHIND) durableAbort.abort();
    });
    let rawEvents = 0;
    const rawEventsTime = await seconds(async () => (rawEvents = await rawRead(nc, 'EVENTS', 'mesh.seat.mesh-controller.event.>')));
    rows.push([`durable consumer on EVENTS, ${followed} facts behind, events/s`, followed / durableTime, rawEvents / rawEventsTime, '/s']);
  } finally {
    tool?.stop();
    await nc.close();
    await stopNatsServer(server, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }

  const print = (line: string): void => void process.stdout.write(`${line}\n`);
  print(`${'measure'.padEnd(64)} ${'mesh'.padStart(10)} ${'raw'.padStart(10)} ${'ratio'.padStart(7)}`);
  for (const [what, mine, raw, unit] of rows) {
    const format = (value: number): string => (unit === 's' ? `${(value * 1000).toFixed(0)} ms` : value.toFixed(0));
    // For a time, the ratio is how many times longer than raw; for a rate, what fraction of raw.
    print(`${what.padEnd(64)} ${format(mine).padStart(10)} ${format(raw).padStart(10)} ${(mine / raw).toFixed(2).padStart(7)}`);
  }
};

await main();
