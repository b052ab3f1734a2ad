// How close the mesh log gets to nats-server's own limits, measured in one run on one server:
// each figure beside the raw JetStream rate for the same shape of work, and their ratio.
//
//   npm run bench            (MESSAGES=20000 AGGREGATES=1000 WINDOW=256 to change the shape)
//
// It starts a nats-server of its own with the dev stack's script, in .mesh/tmp, and removes it.

import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { DeliverPolicy, jetstream, jetstreamManager, RetentionPolicy, StorageType } from '@nats-io/jetstream';
import { meshHome } from '../src/config.js';
import { connectNats } from '../src/adapters/nats/connect.js';
import { JetStreamEventLog } from '../src/adapters/eventlog/jetstream-log.js';
import { assertLogStream } from '../src/adapters/eventlog/log-stream.js';
import { LogWriter } from '../src/adapters/eventlog/log-writer.js';
import { newIdentity } from '../src/adapters/identity.js';
import { startNatsServer, stopNatsServer } from '../src/dev/nats-server.js';
import { freePort } from '../src/dev/ports.js';
import { z } from 'zod';
import { defineEvent, EventRegistry } from '../src/domain/events/registry.js';

const MESSAGES = Number(process.env.MESSAGES ?? 20_000);
const AGGREGATES = Number(process.env.AGGREGATES ?? 1_000);
const WINDOW = Number(process.env.WINDOW ?? 256);
const SERIAL = Number(process.env.SERIAL ?? 2_000);

const Ticked = defineEvent({ type: 'bench.ticked', version: 1, schema: z.object({ n: z.number().int(), note: z.string() }).strict() });
const registry = new EventRegistry([Ticked]);
const NOTE = 'x'.repeat(64);

/** Runs `count` tasks with at most `window` in flight: pipelining, as a busy control plane would. */
const pipelined = async (count: number, window: number, task: (i: number) => Promise<unknown>): Promise<void> => {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) await task(next++);
  };
  await Promise.all(Array.from({ length: Math.min(window, count) }, worker));
};

const timed = async (work: () => Promise<void>): Promise<number> => {
  const started = process.hrtime.bigint();
  await work();
  return Number(process.hrtime.bigint() - started) / 1e9;
};

const main = async (): Promise<void> => {
  const dir = join(meshHome(), 'tmp', `bench-${process.pid}`);
  const server = { dir, port: await freePort() };
  const started = await startNatsServer(server);
  const nc = await connectNats(started.url, { name: 'bench' });
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  const rows: [string, number, number][] = [];
  try {
    await jsm.streams.add({ name: 'RAW', subjects: ['raw.>'], storage: StorageType.File, retention: RetentionPolicy.Limits });
    await assertLogStream(jsm, { stream: 'LOG', subjectPrefix: 'mesh.log' });
    // Every append signed and chained by the process's one writer, as the controller appends.
    const log = new JetStreamEventLog(nc, { stream: 'LOG', subjectPrefix: 'mesh.log', registry, writer: new LogWriter(nc, { stream: 'LOG', key: newIdentity() }) });
    const body = (n: number) => JSON.stringify({ firstVersion: 1, events: [{ type: 'bench.ticked', data: { n, note: NOTE } }] });

    // 1. Pipelined appends across many aggregates.
    const rawPipelined = await timed(() =>
      pipelined(MESSAGES, WINDOW, (i) => js.publish(`raw.agg.a${i % AGGREGATES}`, body(i), { msgID: `raw-${i}` })),
    );
    const versions = new Array<number>(AGGREGATES).fill(0);
    const logPipelined = await timed(() =>
      pipelined(MESSAGES, WINDOW, async (i) => {
        const a = i % AGGREGATES;
        // Aggregate a's appends are issued in order, one round apart; rounds overlap only across aggregates.
        const expected = Math.floor(i / AGGREGATES);
        while (versions[a] !== expected) await new Promise((r) => setImmediate(r));
        const result = await log.append(`agg.a${a}`, [{ type: 'bench.ticked', data: { n: i, note: NOTE } }], expected, { commandId: `c${i}`, actor: 'bench' });
        versions[a] = result.version;
      }),
    );
    rows.push([`appends/s, pipelined (window ${WINDOW}) across ${AGGREGATES} aggregates`, MESSAGES / logPipelined, MESSAGES / rawPipelined]);

    // 2. Conditioned appends on one aggregate: each waits for the one before.
    let lastSeq = 0;
    const rawSerial = await timed(async () => {
      for (let i = 0; i < SERIAL; i++) lastSeq = (await js.publish('raw.one', body(i), { expect: { lastSubjectSequence: lastSeq } })).seq;
    });
    let version = 0;
    const logSerial = await timed(async () => {
      for (let i = 0; i < SERIAL; i++) version = (await log.append('agg.one', [{ type: 'bench.ticked', data: { n: i, note: NOTE } }], version, { commandId: `s${i}`, actor: 'bench' })).version;
    });
    rows.push([`conditioned appends/s on one aggregate (serial)`, SERIAL / logSerial, SERIAL / rawSerial]);

    // 3. Following the whole log from the start.
    const total = MESSAGES + SERIAL;
    const rawRead = await timed(async () => {
      const consumer = await js.consumers.get('RAW', { deliver_policy: DeliverPolicy.All });
      const messages = await consumer.consume({ max_messages: 1024 });
      let n = 0;
      for await (const m of messages) {
        JSON.parse(m.string());
        if (++n === total) break;
      }
      messages.stop();
    });
    const logRead = await timed(async () => {
      let n = 0;
      const abort = new AbortController();
      // Following the whole log checks every commit's link and signature.
      for await (const item of log.follow({ signal: abort.signal })) {
        if (item.kind === 'event' && ++n === total) abort.abort();
      }
    });
    rows.push([`events/s read following the whole log (${total})`, total / logRead, total / rawRead]);
  } finally {
    await nc.close();
    await stopNatsServer(server, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }

  const print = (text: string): void => void process.stdout.write(`${text}\n`);
  print(`\nmesh log vs raw JetStream (nats-server 2.9, file storage, one process, ${MESSAGES} messages)\n`);
  print(`${'measure'.padEnd(64)} ${'mesh log'.padStart(10)} ${'raw'.padStart(10)} ${'ratio'.padStart(7)}`);
  for (const [what, mine, raw] of rows) {
    print(`${what.padEnd(64)} ${mine.toFixed(0).padStart(10)} ${raw.toFixed(0).padStart(10)} ${(mine / raw).toFixed(2).padStart(7)}`);
  }
};

await main();
