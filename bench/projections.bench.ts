// The projection engine's rebuild rate beside the two physical limits it sits between, measured
// in one run: reading the same log straight from JetStream, and bulk-loading (COPY) the same rows
// into the same table in PostgreSQL. Target: a rebuild at half or better of the slower limit.
//
//   npm run bench:projections        (EVENTS=1000000 to change the size; EVENTS_PER_COMMIT=1)
//
// It starts a nats-server and a PostgreSQL cluster of its own with the dev stack's scripts, in
// .mesh/tmp, and removes them. It runs node as the controller runs it (FOLDING_NODE_FLAGS).

import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import pg from 'pg';
import { pino } from 'pino';
import { z } from 'zod';
import { meshHome } from '../src/config.js';
import { databaseUrlFor } from '../src/adapters/database-logins.js';
import { connectNats } from '../src/adapters/nats/connect.js';
import { encodeCommit } from '../src/adapters/eventlog/codec.js';
import { assertLogStream } from '../src/adapters/eventlog/log-stream.js';
import { startNatsServer, stopNatsServer } from '../src/dev/nats-server.js';
import { startPostgres, stopPostgres } from '../src/dev/postgres.js';
import { freePort } from '../src/dev/ports.js';
import type { Commit } from '../src/domain/events/envelope.js';
import { defineEvent, EventRegistry } from '../src/domain/events/registry.js';
import { auditProjection } from '../src/projections/audit.js';
import { requestRebuild } from '../src/projections/builds.js';
import { CommitReader } from '../src/projections/commit-reader.js';
import { copyFromStdin } from '../src/projections/copy.js';
import { ensureControlSchema } from '../src/projections/control.js';
import { terminalProgress } from '../src/projections/progress.js';
import { connectClient } from '../src/projections/projector.js';
import { BuildRunner, DEFAULT_RUNNER_SETTINGS } from '../src/projections/runner.js';
import { newIdentity } from '../src/adapters/identity.js';
import { ChainedPublisher } from './chained.js';
import { runAsFolding } from './folding-process.js';

const EVENTS = Number(process.env.EVENTS ?? 300_000);
const PER_COMMIT = Number(process.env.EVENTS_PER_COMMIT ?? 1);
const WINDOW = 512;

const Ticked = defineEvent({ type: 'bench.ticked', version: 1, schema: z.object({ n: z.number().int(), note: z.string() }).strict() });
const registry = new EventRegistry([Ticked]);
const STREAM = 'LOG';
const PREFIX = 'mesh.log';
const AGGREGATES = 1_000;
const TIME = '2026-12-02T14:36:00.049Z';

const timed = async (work: () => Promise<void>): Promise<number> => {
  const started = process.hrtime.bigint();
  await work();
  return Number(process.hrtime.bigint() - started) / 1e9;
};

const commitOf = (c: number): Commit => ({
  firstVersion: Math.floor(c / AGGREGATES) * PER_COMMIT + 1,
  events: Array.from({ length: PER_COMMIT }, (_, i) => ({
    id: `e${c}-${i}`,
    type: 'bench.ticked',
    schemaVersion: 1,
    aggregate: `bench.a${c % AGGREGATES}`,
    time: TIME,
    actor: 'operator:bench@host',
    commandId: `c${c}`,
    causationId: `c${c}`,
    correlationId: `c${c}`,
    data: { n: c, note: 'x'.repeat(32) },
  })),
});

const tsvOf = (commits: number): Buffer[] => {
  const chunks: Buffer[] = [];
  let lines: string[] = [];
  for (let c = 0; c < commits; c++) {
    const commit = commitOf(c);
    commit.events.forEach((e, i) => {
      lines.push([c + 1, i, e.id, e.type, e.aggregate, commit.firstVersion + i, e.actor, e.commandId, e.causationId, e.correlationId, e.time].join('\t'));
    });
    if (lines.length >= 10_000) {
      chunks.push(Buffer.from(`${lines.join('\n')}\n`));
      lines = [];
    }
  }
  if (lines.length) chunks.push(Buffer.from(`${lines.join('\n')}\n`));
  return chunks;
};

const main = async (): Promise<void> => {
  const commits = Math.ceil(EVENTS / PER_COMMIT);
  const events = commits * PER_COMMIT;
  const dir = join(meshHome(), 'tmp', `bench-projections-${process.pid}`);
  const nats = { dir: join(dir, 'nats'), port: await freePort() };
  const postgres = { dir: join(dir, 'postgres'), port: await freePort(), secretsDir: join(dir, 'secrets') };
  const say = (text: string): void => void process.stderr.write(`${text}\n`);
  const natsStatus = await startNatsServer(nats);
  const pgStatus = await startPostgres(postgres);
  // The projector's own login, as the controller's projector has it.
  const databaseUrl = databaseUrlFor('projector', { databaseUrl: pgStatus.url, secretsDir: postgres.secretsDir }, {});
  const nc = await connectNats(natsStatus.url, { name: 'bench-projections' });
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 4 });
  try {
    const jsm = await jetstreamManager(nc);
    await assertLogStream(jsm, { stream: STREAM, subjectPrefix: PREFIX });
    const js = jetstream(nc);
    say(`writing ${events.toLocaleString('en')} events (${commits.toLocaleString('en')} commits) to the log, signed and chained…`);
    await new ChainedPublisher(js, newIdentity()).publish(commits, (c) => ({ subject: `${PREFIX}.bench.a${c % AGGREGATES}`, payload: encodeCommit(commitOf(c)) }), WINDOW);

    say('1/3 reading the log from JetStream (an ordered consumer, as the projector reads it)…');
    const readSeconds = await timed(async () => {
      const consumer = await js.consumers.get(STREAM, { deliver_policy: DeliverPolicy.All });
      const messages = await consumer.consume({ max_messages: 2048 });
      let n = 0;
      for await (const m of messages) {
        JSON.parse(m.string());
        if (++n === commits) break;
      }
      messages.stop();
    });

    say('   …and through the projector\'s reader, checking every link and signature, decoding and validating every event…');
    const decodeSeconds = await timed(async () => {
      const abort = new AbortController();
      for await (const commit of new CommitReader(nc, { stream: STREAM, subjectPrefix: PREFIX, registry }).commits(1, abort.signal)) {
        if (commit.pending === 0) abort.abort();
      }
    });

    say('2/3 bulk-loading the same rows into the audit table with COPY…');
    await pool.query('CREATE SCHEMA copy_limit');
    await pool.query(`SET search_path TO copy_limit; ${auditProjection.schemaSql}; SET search_path TO DEFAULT`);
    const chunks = tsvOf(commits);
    const copyClient = new pg.Client({ connectionString: databaseUrl });
    await copyClient.connect();
    const copySeconds = await timed(() => copyFromStdin(copyClient, 'copy_limit.audit', chunks));
    await copyClient.end();

    say('3/3 rebuilding the audit projection from the log…');
    const schemas = { control: 'projector', read: 'mesh' };
    await ensureControlSchema(pool, schemas);
    const build = await requestRebuild(pool, schemas, auditProjection);
    const runner = new BuildRunner(
      {
        pool,
        connect: () => connectClient(databaseUrl),
        reader: new CommitReader(nc, { stream: STREAM, subjectPrefix: PREFIX, registry }),
        schemas,
        projection: auditProjection,
        logger: pino({ level: process.stderr.isTTY ? 'warn' : 'info' }, pino.destination(2)),
        settings: DEFAULT_RUNNER_SETTINGS,
        onProgress: terminalProgress(),
        untilServing: true,
      },
      build,
    );
    const rebuildSeconds = await timed(async () => void (await runner.run(new AbortController().signal)));
    const { rows } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM mesh.audit');
    if (rows[0]?.n !== events) throw new Error(`the rebuild holds ${rows[0]?.n} rows, not ${events}`);

    const read = events / readSeconds;
    const copy = events / copySeconds;
    const decoded = events / decodeSeconds;
    const rebuild = events / rebuildSeconds;
    const limit = Math.min(read, copy);
    const print = (text: string): void => void process.stdout.write(`${text}\n`);
    print(`\nprojection rebuild vs its physical limits (${events.toLocaleString('en')} events, ${PER_COMMIT} per commit; nats-server 2.9 and PostgreSQL 15, one machine)\n`);
    print(`${'measure'.padEnd(58)} ${'events/s'.padStart(10)} ${'rebuild ÷'.padStart(10)}`);
    print(`${'read the log from JetStream (ordered consumer, JSON.parse)'.padEnd(58)} ${read.toFixed(0).padStart(10)} ${(rebuild / read).toFixed(2).padStart(10)}`);
    print(`${'read, verify and decode it as the projector does'.padEnd(58)} ${decoded.toFixed(0).padStart(10)} ${(rebuild / decoded).toFixed(2).padStart(10)}`);
    print(`${'COPY the same rows into the audit table'.padEnd(58)} ${copy.toFixed(0).padStart(10)} ${(rebuild / copy).toFixed(2).padStart(10)}`);
    print(`${'rebuild of the audit projection (decode, batch, checkpoint)'.padEnd(58)} ${rebuild.toFixed(0).padStart(10)} ${'1.00'.padStart(10)}`);
    print(`\nrebuild ÷ the slower limit: ${(rebuild / limit).toFixed(2)} (target ≥ 0.50)`);
  } finally {
    await pool.end();
    await nc.close();
    await stopNatsServer(nats, 'SIGKILL');
    await stopPostgres(postgres);
    rmSync(dir, { recursive: true, force: true });
  }
};

await runAsFolding(main);
