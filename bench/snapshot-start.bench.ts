// How long the controller's view takes to be current after a start: folding the log from seq 1,
// against starting from the snapshot of its fold and reading only the commits after it. Against a
// nats-server of the benchmark's own, the log filled as the controller's writer fills it (signed,
// chained), every commit read and checked as the view reads it.
//
//   npm run bench:snapshot-start        (COMMITS=100000 TAIL=1000 to change them)

import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { pino } from 'pino';
import { meshHome } from '../src/config.js';
import { encodeCommit } from '../src/adapters/eventlog/codec.js';
import { JetStreamEventLog } from '../src/adapters/eventlog/jetstream-log.js';
import { assertLogStream } from '../src/adapters/eventlog/log-stream.js';
import { foldCodeVersion } from '../src/adapters/fold-version.js';
import { newIdentity } from '../src/adapters/identity.js';
import { connectNats } from '../src/adapters/nats/connect.js';
import { FoldSnapshotStore } from '../src/adapters/nats/fold-snapshot-store.js';
import { FoldSnapshots } from '../src/controller/fold-snapshots.js';
import { MeshView } from '../src/controller/mesh-view.js';
import type { Commit } from '../src/domain/events/envelope.js';
import { meshEventRegistry } from '../src/domain/registry.js';
import { startNatsServer, stopNatsServer } from '../src/dev/nats-server.js';
import { freePort } from '../src/dev/ports.js';
import { ChainedPublisher } from './chained.js';
import { runAsFolding } from './folding-process.js';

const COMMITS = Number(process.env.COMMITS ?? 100_000);
const TAIL = Number(process.env.TAIL ?? 1_000);
const NODES = 1_000;

const factCommit = (i: number): { subject: string; payload: Uint8Array } => {
  const node = `n${i % NODES}`;
  const n = Math.floor(i / NODES) + 1;
  const commit = {
    firstVersion: n,
    events: [{ id: `f${i}`, type: 'fact.applied', schemaVersion: 1, aggregate: `fact.${node}`, time: '2026-06-01T00:00:00.000Z', actor: 'controller', commandId: `report:${i}`, causationId: `report:${i}`, correlationId: `report:${i}`, data: { node, module: i % 2 ? 'ci' : 'tool', declarationSequence: n, version: { definitionVersion: 1, artifact: null }, previous: null } }],
  };
  return { subject: `mesh.log.fact.${node}`, payload: encodeCommit(commit as Commit) };
};

const main = async (): Promise<void> => {
  const dir = join(meshHome(), 'tmp', `bench-snapshot-start-${process.pid}`);
  const server = { dir, port: await freePort() };
  const { url } = await startNatsServer(server);
  const nc = await connectNats(url, { name: 'bench-snapshot-start' });
  const print = (text: string): void => void process.stdout.write(`${text}\n`);
  try {
    await assertLogStream(await jetstreamManager(nc), { stream: 'LOG', subjectPrefix: 'mesh.log' });
    const key = newIdentity();
    const chained = new ChainedPublisher(jetstream(nc), key);
    await chained.publish(COMMITS, factCommit);
    const log = () => new JetStreamEventLog(nc, { stream: 'LOG', subjectPrefix: 'mesh.log', registry: meshEventRegistry() });
    const logger = pino({ level: 'silent' });
    const snapshots = new FoldSnapshots({ store: new FoldSnapshotStore(nc, { logStream: 'LOG', fold: 'mesh' }), log: log(), stream: 'LOG', codeVersion: foldCodeVersion(), signer: key, logger });
    const current = async (): Promise<{ ms: number; view: MeshView }> => {
      const view = new MeshView(log(), { logger, snapshots: { keeper: snapshots, schedule: { everyEvents: 100_000_000, everySeconds: 86_400 } } });
      const started = performance.now();
      view.start();
      await view.atHead();
      return { ms: performance.now() - started, view };
    };

    const cold = await current();
    const stopping = performance.now();
    await cold.view.stop(); // writes the snapshot
    const stopMs = performance.now() - stopping;
    const stored = await new FoldSnapshotStore(nc, { logStream: 'LOG', fold: 'mesh' }).read();
    const size = (await stored?.bytes())?.length ?? 0;
    await chained.publish(TAIL, (i) => factCommit(COMMITS + i));
    const warm = await current();
    if (!warm.view.startedFrom()?.snapshot) throw new Error(`the view did not start from the snapshot: ${warm.view.startedFrom()?.reason}`);
    await warm.view.stop();

    print(`\nthe view current after a start, a log of ${COMMITS.toLocaleString('en')} commits (facts about ${NODES} nodes)`);
    print(`  from seq 1                                   ${(cold.ms / 1000).toFixed(2).padStart(8)} s`);
    print(`  from the snapshot, ${TAIL.toLocaleString('en')} commits after it  ${(warm.ms / 1000).toFixed(2).padStart(8)} s   (${(cold.ms / warm.ms).toFixed(0)}× sooner)`);
    print(`  the snapshot: ${(size / 1024 / 1024).toFixed(1)} MB, ${stored?.meta['encode-ms']} ms to encode, ${(stopMs / 1000).toFixed(2)} s to write at stop (encode, sign, store)`);
  } finally {
    await nc.close();
    await stopNatsServer(server);
    rmSync(dir, { recursive: true, force: true });
  }
};

await runAsFolding(main);
