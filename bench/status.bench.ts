// What `mesh status --json` costs as the log grows: the same verb, as an operator runs it (a CLI
// process of its own), against a mesh whose log holds SMALL events and one whose log holds EVENTS,
// both of the mesh's own event types as the deciders make them (tests/projections/mesh-log.ts).
// Reads answer from the projections, NODES and node status, never from a fold of the log, so the
// time should follow the mesh, not its history. Target: EVENTS ÷ SMALL ≤ 1.5.
//
//   npm run bench:status      (EVENTS=500000 SMALL=1000 RUNS=7 to change the shape)
//
// It starts a nats-server and a PostgreSQL cluster of its own with the dev stack's scripts, in
// .mesh/tmp, folds each log with the controller's projector, and removes them. The generated mesh
// grows a little with its history (a module and a renamed seat every ten rounds), as a real one does.

import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import pg from 'pg';
import { meshHome, projectRoot } from '../src/config.js';
import { databaseUrlFor } from '../src/adapters/database-logins.js';
import { newIdentity } from '../src/adapters/identity.js';
import { assertLogStream } from '../src/adapters/eventlog/log-stream.js';
import { connectNats } from '../src/adapters/nats/connect.js';
import { assertControlStreams } from '../src/adapters/nats/control-streams.js';
import { createOperatorKey } from '../src/adapters/operator-keys.js';
import { ensureNodeStatus } from '../src/controller/node-status.js';
import { startNatsServer, stopNatsServer } from '../src/dev/nats-server.js';
import { startPostgres, stopPostgres } from '../src/dev/postgres.js';
import { freePort } from '../src/dev/ports.js';
import { meshEventRegistry } from '../src/domain/registry.js';
import { meshProjections } from '../src/projections/catalogue.js';
import { Projector } from '../src/projections/projector.js';
import { writeMeshLog } from '../tests/projections/mesh-log.js';
import { runAsFolding } from './folding-process.js';

const SMALL = Number(process.env.SMALL ?? 1_000);
const EVENTS = Number(process.env.EVENTS ?? 500_000);
const RUNS = Number(process.env.RUNS ?? 7);

const say = (text: string): void => void process.stderr.write(`${text}\n`);
const print = (text: string): void => void process.stdout.write(`${text}\n`);
const count = (n: number): string => n.toLocaleString('en');

const seconds = async (work: () => Promise<unknown>): Promise<number> => {
  const started = process.hrtime.bigint();
  await work();
  return Number(process.hrtime.bigint() - started) / 1e9;
};

const median = (samples: number[]): number => {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
};

/** One `mesh status --json`, as an operator runs it; its answer must be JSON with every projection caught up. */
const status = (env: Record<string, string>): Promise<void> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(projectRoot, 'bin', 'mesh.js'), 'status', '--json'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('exit', () => {
      try {
        const body = JSON.parse(stdout) as { projections: { projection: string; lagCommits: number }[] };
        const behind = body.projections.filter((p) => p.lagCommits !== 0);
        if (behind.length > 0) reject(new Error(`mesh status read projections behind the log: ${JSON.stringify(behind)}`));
        else resolve();
      } catch {
        reject(new Error(`mesh status did not answer in JSON:\n${stdout}\n${stderr}`));
      }
    });
  });

interface Mesh {
  events: number;
  generateSeconds: number;
  foldSeconds: number;
  env: Record<string, string>;
}

/** A mesh of its own names whose log holds at least `minEvents` events, folded into projections of its own. */
const meshOf = async (nc: NatsConnection, minEvents: number, urls: { nats: string; projector: string; controller: string; reader: string }, dir: string): Promise<Mesh> => {
  const name = `m${minEvents}`;
  const names = { logStream: `LOG_${name}`, logPrefix: `${name}.log`, nodesStream: `NODES_${name}`, prefix: name };
  const schemas = { control: `projector_${name}`, read: `mesh_${name}` };
  const jsm = await jetstreamManager(nc);
  await assertLogStream(jsm, { stream: names.logStream, subjectPrefix: names.logPrefix });
  await assertControlStreams(jsm, { nodes: names.nodesStream, control: `CONTROL_${name}`, prefix: names.prefix });

  say(`writing a mesh log of at least ${count(minEvents)} events, signed and chained…`);
  let generated: Awaited<ReturnType<typeof writeMeshLog>> | undefined;
  const generateSeconds = await seconds(async () => (generated = await writeMeshLog(nc, { stream: names.logStream, subjectPrefix: names.logPrefix, key: newIdentity() }, { minEvents })));
  if (!generated) throw new Error('no log was written');
  const head = generated.headSeq;
  say(`  ${count(generated.events)} events in ${count(head)} commits, written in ${generateSeconds.toFixed(1)} s`);

  say(`folding it into every projection, as the controller's projector does…`);
  const pool = new pg.Pool({ connectionString: urls.projector, max: 2 });
  const projector = new Projector({ databaseUrl: urls.projector, nc, log: { stream: names.logStream, subjectPrefix: names.logPrefix, registry: meshEventRegistry() }, projections: meshProjections(), schemas, planIntervalMs: 500 });
  const projections = meshProjections().length;
  const foldSeconds = await seconds(async () => {
    await projector.start();
    for (;;) {
      const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${schemas.control}".builds WHERE status = 'serving' AND checkpoint >= $1`, [head]);
      if ((rows[0]?.n ?? 0) === projections) break;
      await new Promise((r) => setTimeout(r, 250));
    }
  });
  await projector.stop();
  await pool.end();
  say(`  folded in ${foldSeconds.toFixed(1)} s`);

  // The controller's own tables, as its report ingester makes them (no node has reported).
  const controller = new pg.Pool({ connectionString: urls.controller, max: 1 });
  await ensureNodeStatus(controller, `status_${name}`);
  await controller.end();

  const keyFile = join(dir, `${name}-operator.key`);
  createOperatorKey(keyFile, 'ada');
  return {
    events: generated.events,
    generateSeconds,
    foldSeconds,
    env: {
      MESH_NATS_URL: urls.nats,
      MESH_DATABASE_URL_READER: urls.reader,
      MESH_OPERATOR_KEY: keyFile,
      MESH_LOG_STREAM: names.logStream,
      MESH_LOG_SUBJECT_PREFIX: names.logPrefix,
      MESH_NODES_STREAM: names.nodesStream,
      MESH_SUBJECT_PREFIX: names.prefix,
      MESH_PROJECTOR_SCHEMA: schemas.control,
      MESH_READ_SCHEMA: schemas.read,
      MESH_CONTROLLER_SCHEMA: `status_${name}`,
    },
  };
};

const main = async (): Promise<void> => {
  const dir = join(meshHome(), 'tmp', `bench-status-${process.pid}`);
  const nats = { dir: join(dir, 'nats'), port: await freePort() };
  const postgres = { dir: join(dir, 'postgres'), port: await freePort(), secretsDir: join(dir, 'secrets') };
  const natsStatus = await startNatsServer(nats);
  const pgStatus = await startPostgres(postgres);
  const settings = { databaseUrl: pgStatus.url, secretsDir: postgres.secretsDir };
  const urls = { nats: natsStatus.url, projector: databaseUrlFor('projector', settings, {}), controller: databaseUrlFor('controller', settings, {}), reader: databaseUrlFor('reader', settings, {}) };
  const nc = await connectNats(natsStatus.url, { name: 'bench-status' });
  try {
    const meshes = [await meshOf(nc, SMALL, urls, dir), await meshOf(nc, EVENTS, urls, dir)];
    // The CLI's bundle is built on its first run: that run is not measured.
    await status(meshes[0]?.env ?? {});
    const times = meshes.map(() => [] as number[]);
    // Interleaved, so a slower minute of the machine weighs on both alike.
    for (let run = 0; run < RUNS; run++) {
      for (const [i, mesh] of meshes.entries()) times[i]?.push(await seconds(() => status(mesh.env)));
    }
    const [small, large] = times.map(median);
    print(`\nmesh status --json against a log of each size (median of ${RUNS} runs, one CLI process each; nats-server 2.9 and PostgreSQL 15, one machine)\n`);
    print(`${'log events'.padStart(12)} ${'written in s'.padStart(13)} ${'folded in s'.padStart(12)} ${'status s'.padStart(9)} ${'fastest s'.padStart(10)} ${'slowest s'.padStart(10)}`);
    for (const [i, mesh] of meshes.entries()) {
      const samples = times[i] ?? [];
      print(
        `${count(mesh.events).padStart(12)} ${mesh.generateSeconds.toFixed(1).padStart(13)} ${mesh.foldSeconds.toFixed(1).padStart(12)} ${median(samples).toFixed(3).padStart(9)} ${Math.min(...samples).toFixed(3).padStart(10)} ${Math.max(...samples).toFixed(3).padStart(10)}`,
      );
    }
    print(`\n${count(meshes[1]?.events ?? 0)} ÷ ${count(meshes[0]?.events ?? 0)} events: ${((large ?? 0) / (small ?? 1)).toFixed(2)} (target ≤ 1.50)`);
  } finally {
    await nc.close();
    await stopNatsServer(nats, 'SIGKILL');
    await stopPostgres(postgres);
    rmSync(dir, { recursive: true, force: true });
  }
};

await runAsFolding(main);
