// From a command's acknowledgement to the agent having applied the change: p50 and p99 over many
// assignments, with a real controller and a real agent running a real process on this machine.
//
//   npx tsx bench/apply-latency.bench.ts        (ROUNDS=40 to change the count)

import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { Agent } from '../src/agent/agent.js';
import { stopRecordedProcesses } from '../src/agent/left-running.js';
import { meshHome } from '../src/config.js';
import { connectNats } from '../src/adapters/nats/connect.js';
import { JetStreamEventLog } from '../src/adapters/eventlog/jetstream-log.js';
import { LogWriter } from '../src/adapters/eventlog/log-writer.js';
import { newIdentity } from '../src/adapters/identity.js';
import { bootstrapControlPlane } from '../src/controller/bootstrap.js';
import { MeshView } from '../src/controller/mesh-view.js';
import { Controller } from '../src/controller/controller.js';
import { MeshService } from '../src/controller/mesh-service.js';
import type { Report } from '../src/domain/reports/report.js';
import { meshEventRegistry } from '../src/domain/registry.js';
import { startNatsServer, stopNatsServer } from '../src/dev/nats-server.js';
import { freePort } from '../src/dev/ports.js';

const ROUNDS = Number(process.env.ROUNDS ?? 40);

const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;

const main = async (): Promise<void> => {
  const dir = join(meshHome(), 'tmp', `bench-apply-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  const server = { dir: join(dir, 'nats'), port: await freePort() };
  const { url } = await startNatsServer(server);
  const nc = await connectNats(url, { name: 'bench-apply' });
  const names = { logStream: 'LOG', logPrefix: 'mesh.log', nodesStream: 'NODES', controlStream: 'CONTROL', prefix: 'mesh' };
  const registry = meshEventRegistry();
  const key = newIdentity();
  const writer = new LogWriter(nc, { stream: names.logStream, key });
  const log = new JetStreamEventLog(nc, { stream: names.logStream, subjectPrefix: names.logPrefix, registry, writer });
  await bootstrapControlPlane(nc, log, { stream: names.logStream, subjectPrefix: names.logPrefix, meshName: 'bench', actor: 'bench', controllerKey: key.publicKey });
  const mesh = new MeshService(new JetStreamEventLog(nc, { stream: names.logStream, subjectPrefix: names.logPrefix, registry, writer }));
  let n = 0;
  const run = (command: Parameters<MeshService['execute']>[0]) => mesh.execute(command, { commandId: `bench-${++n}`, actor: 'bench' });
  const view = new MeshView(new JetStreamEventLog(nc, { stream: names.logStream, subjectPrefix: names.logPrefix, registry: registry, writer }), { logger: pino({ level: 'silent' }) });
  view.start();
  const controller = new Controller(nc, view, new JetStreamEventLog(nc, { stream: names.logStream, subjectPrefix: names.logPrefix, registry, writer }), {
    names: { nodesStream: names.nodesStream, controlStream: names.controlStream, prefix: names.prefix },
    actor: 'controller',
    controllerKey: key,
    logger: pino({ level: 'silent' }),
  });
  await controller.start();

  const reports: { at: number; report: Report }[] = [];
  const stateDir = join(dir, 'agent');
  const agent = new Agent({
    node: 'alpha',
    natsUrl: url,
    stateDir,
    controllerKey: key.publicKey,
    wire: { prefix: names.prefix, nodesStream: names.nodesStream },
    timings: { resyncMs: 30_000, stopGraceMs: 2_000 },
    logger: pino({ level: 'silent' }),
    onReport: (report) => reports.push({ at: performance.now(), report }),
  });
  await agent.start();
  await run({ type: 'add-node', node: 'alpha', root: join(dir, 'root') });
  await run({ type: 'register-module', manifest: { name: 'sleeper', resources: { processes: [{ name: 'sleep', run: ['sleep', '600'] }] } } });

  const runs = (module: string) => (r: { report: Report }) => r.report.running.some((m) => m.module === module);
  const waitForReport = async (since: number, predicate: (r: { report: Report }) => boolean): Promise<number> => {
    for (;;) {
      const found = reports.find((r) => r.at >= since && predicate(r));
      if (found) return found.at;
      await new Promise((r) => setTimeout(r, 2));
    }
  };

  const latencies: number[] = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      await run({ type: 'assign', module: 'sleeper', node: 'alpha', hold: [], pins: {}, values: {}, placements: {} });
      const acknowledged = performance.now();
      const applied = await waitForReport(acknowledged, runs('sleeper'));
      latencies.push(applied - acknowledged);
      await run({ type: 'unassign', module: 'sleeper', node: 'alpha' });
      const unassigned = performance.now();
      await waitForReport(unassigned, (r) => !runs('sleeper')(r));
    }
  } finally {
    await agent.stop();
    stopRecordedProcesses(stateDir, 'SIGKILL');
    await controller.stop();
  await view.stop();
    await nc.close();
    await stopNatsServer(server, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }

  const sorted = [...latencies].sort((a, b) => a - b);
  const print = (text: string): void => void process.stdout.write(`${text}\n`);
  print(`\nfrom a command's acknowledgement to the agent running the process (${ROUNDS} assignments)`);
  print(`p50 ${percentile(sorted, 50).toFixed(1)} ms   p99 ${percentile(sorted, 99).toFixed(1)} ms   max ${sorted.at(-1)?.toFixed(1)} ms`);
};

await main();
