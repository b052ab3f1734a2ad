// What starting the controller costs as the log grows, the mesh staying the same: logs of a
// 1,000-node mesh (bench/mesh-history.ts) of 1,000, 10,000, 100,000 and 1,000,000 events. For each,
// the real `mesh controller` process is started twice — a first start, then a restart on the same
// log — and timed from its spawn to the first signed operator command answered (an `add-node`
// sent as the CLI sends it, again every 25 ms until a controller answers), with its resident
// memory right after. The projections are folded to the head before the first start (not timed),
// as a running mesh's are. Targets: start(1M) ÷ start(1k) ≤ 2 and under 5 s; RSS(1M) ÷ RSS(10k) ≤ 1.5.
//
//   npm run bench:start      (BENCH_START_SIZES=1000,10000 for a shorter run; BENCH_NODES=1000)
//
// Servers of its own (bench/cost-stack.ts, ports 44222 / 48222 / 45432 / 48081), removed at the end.

import { BENCH_PORTS, buildCli, connectOperator, count, prepareMesh, print, say, sendUntilAnswered, startBenchServers, startControllerProcess, type BenchMesh, type ControllerProcess } from './cost-stack.js';
import { runAsFolding } from './folding-process.js';

const SIZES = (process.env.BENCH_START_SIZES ?? '1000,10000,100000,1000000').split(',').map((s) => Number(s.trim())).filter((n) => n > 0);
const NODES = Number(process.env.BENCH_NODES ?? 1_000);
const START_TIMEOUT_S = Number(process.env.BENCH_START_TIMEOUT_S ?? 900);

interface Start {
  seconds: number;
  rssMiB: number;
  peakMiB: number;
  /** seconds from spawn to these of the controller's own lines */
  caughtUp?: number;
  started?: number;
  errors: string[];
}

/** Spawn to the first signed command answered, and the controller's memory then. */
const timeStart = async (mesh: BenchMesh, label: string): Promise<Start> => {
  const operator = await connectOperator(mesh);
  let controller: ControllerProcess | undefined;
  try {
    controller = startControllerProcess(mesh, BENCH_PORTS.http);
    // The same command id every time it is sent again: it is carried out once.
    const { answer, at: answeredAt } = await sendUntilAnswered(operator, { type: 'add-node', node: `s-${label}` }, `start-${label}`, controller, START_TIMEOUT_S);
    if (answer.events.length === 0 && !answer.duplicate) throw new Error(`add-node appended nothing: ${answer.summary}`);
    const memory = controller.memory();
    const at = (msg: string): number | undefined => {
      const t = controller?.said.get(msg);
      return t === undefined ? undefined : t - (controller?.spawnedAt ?? 0);
    };
    // BENCH_TRACE=1: when the controller said each thing, from spawn (where a start's time goes).
    if (process.env.BENCH_TRACE) {
      for (const [msg, t] of [...controller.said].sort((a, b) => a[1] - b[1])) process.stdout.write(`      ${(t - controller.spawnedAt).toFixed(2).padStart(6)} s  ${msg.slice(0, 110)}\n`);
    }
    const caughtUp = at('caught up with the log');
    const started = at('controller started');
    return {
      seconds: answeredAt - controller.spawnedAt,
      rssMiB: memory.rssMiB,
      peakMiB: memory.peakMiB,
      ...(caughtUp !== undefined ? { caughtUp } : {}),
      ...(started !== undefined ? { started } : {}),
      errors: [...controller.errors],
    };
  } finally {
    await controller?.stop();
    await operator.close();
  }
};

interface Row {
  mesh: BenchMesh;
  first: Start;
  restart: Start;
}

const main = async (): Promise<void> => {
  buildCli();
  const servers = await startBenchServers('start');
  const rows: Row[] = [];
  try {
    for (const size of SIZES) {
      const mesh = await prepareMesh(servers, `s${size}`, size, { nodes: NODES });
      say(`  starting the controller on it: first start…`);
      const first = await timeStart(mesh, 'first');
      say(`    answered ${first.seconds.toFixed(2)} s after spawn, RSS ${first.rssMiB.toFixed(0)} MiB`);
      say(`  restart…`);
      const restart = await timeStart(mesh, 'restart');
      say(`    answered ${restart.seconds.toFixed(2)} s after spawn, RSS ${restart.rssMiB.toFixed(0)} MiB`);
      for (const start of [first, restart]) for (const line of start.errors.slice(0, 5)) say(`    controller error: ${line}`);
      rows.push({ mesh, first, restart });
    }
  } finally {
    await servers.stop();
  }

  const opt = (n: number | undefined): string => (n === undefined ? '-' : n.toFixed(2));
  print(`\nmesh controller, spawn to the first signed command answered, on logs of a ${count(NODES)}-node mesh (nats-server 2.9 and PostgreSQL 15 on this machine)\n`);
  print(`| log events | commits | written in s | events/s written | projections folded in s | start | answered s | caught up s | "started" s | RSS MiB | peak RSS MiB |`);
  print(`|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|`);
  for (const { mesh, first, restart } of rows) {
    for (const [which, start] of [
      ['first start', first],
      ['restart', restart],
    ] as const) {
      const lead = which === 'first start' ? [count(mesh.history.events), count(mesh.history.commits), mesh.history.seconds.toFixed(1), count(mesh.history.events / mesh.history.seconds), mesh.foldSeconds.toFixed(1)] : ['', '', '', '', ''];
      print(`| ${[...lead, which, start.seconds.toFixed(2), opt(start.caughtUp), opt(start.started), start.rssMiB.toFixed(0), start.peakMiB.toFixed(0)].join(' | ')} |`);
    }
  }
  const bySize = (size: number): Row | undefined => rows.find((row) => row.mesh.name === `s${size}`);
  const smallest = rows[0];
  const largest = rows.at(-1);
  const tenK = bySize(10_000) ?? rows[1];
  print('');
  if (smallest && largest && smallest !== largest) {
    const [s, l] = [count(smallest.mesh.history.events), count(largest.mesh.history.events)];
    for (const which of ['first', 'restart'] as const) {
      const ratio = largest[which].seconds / smallest[which].seconds;
      print(`${which === 'first' ? 'first start' : 'restart'}: start(${l}) ÷ start(${s}) = ${ratio.toFixed(2)} (target ≤ 2.00); start(${l}) = ${largest[which].seconds.toFixed(2)} s (target < 5 s)`);
    }
  }
  if (tenK && largest && tenK !== largest) {
    const [s, l] = [count(tenK.mesh.history.events), count(largest.mesh.history.events)];
    for (const which of ['first', 'restart'] as const) {
      print(`${which === 'first' ? 'first start' : 'restart'}: RSS(${l}) ÷ RSS(${s}) = ${(largest[which].rssMiB / tenK[which].rssMiB).toFixed(2)} (target ≤ 1.50)`);
    }
  }
  print(`\n"caught up": the controller's view said it had read the log to its head; "started": the controller said it was started (every part up). The 1,000-event log is the nodes added and little else; from about 6,000 events the mesh is whole and only its history grows.`);
};

await runAsFolding(main);
