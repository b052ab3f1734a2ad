import { afterEach, describe, expect, it } from '@jest/globals';
import type { AppendResult } from '../../src/adapters/eventlog/event-log.js';
import type { StoredEvent } from '../../src/domain/events/envelope.js';
import { faultCount, report, sleep } from '../helpers/faults.js';
import { meta, openTestLog, type TestLog } from '../helpers/log.js';
import { uniqueName } from '../helpers/names.js';
import { scratchCluster } from '../helpers/scratch-cluster.js';
import { scratchNats } from '../helpers/scratch-nats.js';

// Acknowledged appends while a server is killed (SIGKILL) every few seconds: a single server
// killed and started again, and a cluster of three with one member at a time killed and started
// again. Every acknowledged append must be in the log once, at the sequence it was acknowledged
// with, each aggregate's versions in order with no gap. CI runs a few thousand appends;
// MESH_FAULT_APPENDS=100000 runs the full size (docs/operations.md).

const APPENDS = faultCount('MESH_FAULT_APPENDS', 3_000);
const KILL_EVERY_MS = faultCount('MESH_FAULT_KILL_EVERY_MS', 3_000);
const WRITERS = 16;
/** however fast the appends, they go on until the server has been killed this often */
const MIN_KILLS = 3;

interface Run {
  acknowledged: AppendResult[];
  retries: number;
  kills: number;
  seconds: number;
}

/**
 * WRITERS aggregates appended to at once, each version retried with the same command id until the
 * log acknowledges it (a retry of one that was stored is answered with the original), while
 * `kill` runs every KILL_EVERY_MS.
 */
const appendUnderKills = async (t: TestLog, kill: () => Promise<void>): Promise<Run> => {
  const started = Date.now();
  const acknowledged: AppendResult[] = [];
  let retries = 0;
  let kills = 0;
  let done = false;
  const killer = (async () => {
    while (!done) {
      await sleep(KILL_EVERY_MS);
      if (done) break;
      await kill();
      kills++;
    }
  })();
  const enough = () => acknowledged.length >= APPENDS && kills >= MIN_KILLS;
  const writers = Array.from({ length: WRITERS }, async () => {
    const aggregate = `counter.${uniqueName('k')}`;
    for (let version = 1; !enough(); version++) {
      const commandId = `${aggregate}-${version}`;
      for (let attempt = 1; ; attempt++) {
        try {
          acknowledged.push(await t.log.append(aggregate, [{ type: 'test.counted', data: { n: version } }], version - 1, meta(commandId)));
          break;
        } catch (error) {
          // The server is away (or was, and the append's fate is unknown): the same command again.
          retries++;
          if (attempt > 600) throw error;
          await sleep(100);
        }
      }
    }
  });
  try {
    await Promise.all(writers);
  } finally {
    done = true;
    await killer;
  }
  return { acknowledged, retries, kills, seconds: (Date.now() - started) / 1_000 };
};

/** What the log holds against what was acknowledged: lost, doubled, out of order. */
const judge = async (t: TestLog, run: Run) => {
  const read: StoredEvent[] = [];
  for await (const event of t.another().read()) read.push(event);
  const bySeq = new Map(read.map((e) => [e.seq, e]));
  const lost = run.acknowledged.filter((ack) => {
    const stored = bySeq.get(ack.seq);
    return stored?.aggregate !== ack.aggregate || stored.version !== ack.version || stored.commandId !== ack.events[0]?.commandId;
  });
  const perCommand = new Map<string, number>();
  for (const e of read) perCommand.set(e.commandId, (perCommand.get(e.commandId) ?? 0) + 1);
  const doubled = [...perCommand].filter(([, count]) => count > 1);
  const seqs = read.map((e) => e.seq);
  const inOrder = seqs.every((seq, i) => i === 0 || seq > seqs[i - 1]!);
  const versions = new Map<string, number[]>();
  for (const e of read) versions.set(e.aggregate, [...(versions.get(e.aggregate) ?? []), e.version]);
  const gaps = [...versions].filter(([, vs]) => vs.some((v, i) => v !== i + 1)).map(([aggregate]) => aggregate);
  return { inLog: read.length, lost, doubled, inOrder, gaps };
};

const expectKeptAll = (run: Run, found: Awaited<ReturnType<typeof judge>>): void => {
  expect(run.kills).toBeGreaterThanOrEqual(MIN_KILLS);
  expect(found.lost).toEqual([]);
  expect(found.doubled).toEqual([]);
  expect(found.inOrder).toBe(true);
  expect(found.gaps).toEqual([]);
};

describe('acknowledged appends while servers are killed', () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  });

  it('keeps every acknowledged append once and in order, a single server killed every few seconds', async () => {
    const server = await scratchNats('kill-single');
    cleanups.push(() => server.remove());
    const t = await openTestLog({ url: server.url });
    cleanups.push(() => t.close());
    const run = await appendUnderKills(t, async () => {
      await server.kill();
      await server.restart();
    });
    const found = await judge(t, run);
    report('appends under SIGKILL, one server', {
      did: `${run.acknowledged.length} appends acknowledged by ${WRITERS} writers in ${run.seconds.toFixed(0)} s, the server killed ${run.kills} times (every ${KILL_EVERY_MS} ms), ${run.retries} appends retried`,
      found: `${found.inLog} events in the log; lost ${found.lost.length}, doubled ${found.doubled.length}, ${found.inOrder ? 'in order' : 'OUT OF ORDER'}, ${found.gaps.length} aggregates with a gap`,
    });
    expectKeptAll(run, found);
  });

  it('keeps every acknowledged append once and in order, a member of a three-server cluster killed every few seconds', async () => {
    const cluster = await scratchCluster('kill-cluster');
    cleanups.push(() => cluster.remove());
    const t = await openTestLog({ url: cluster.url, replicas: 3 });
    cleanups.push(() => t.close());
    let next = 0;
    const run = await appendUnderKills(t, async () => {
      // One member at a time: killed, then started again and current before the next is killed.
      const member = next++ % cluster.size;
      await cluster.kill(member);
      await sleep(KILL_EVERY_MS / 2);
      await cluster.restart(member);
      await cluster.ready();
    });
    const found = await judge(t, run);
    report('appends under SIGKILL, one member of three at a time', {
      did: `${run.acknowledged.length} appends acknowledged at 3 replicas by ${WRITERS} writers in ${run.seconds.toFixed(0)} s, a member killed ${run.kills} times, ${run.retries} appends retried`,
      found: `${found.inLog} events in the log; lost ${found.lost.length}, doubled ${found.doubled.length}, ${found.inOrder ? 'in order' : 'OUT OF ORDER'}, ${found.gaps.length} aggregates with a gap`,
    });
    expectKeptAll(run, found);
  });
});
