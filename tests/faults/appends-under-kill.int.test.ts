import { afterEach, describe, it } from '@jest/globals';
import { appendUnderKills, expectKeptAll, judge, KILL_EVERY_MS, WRITERS } from '../helpers/append-faults.js';
import { cleanupsAfter, report, sleep } from '../helpers/faults.js';
import { openTestLog } from '../helpers/log.js';
import { scratchCluster } from '../helpers/scratch-cluster.js';
import { scratchNats } from '../helpers/scratch-nats.js';

// Acknowledged appends while a server is killed (SIGKILL) every few seconds: a single server
// killed and started again, and a cluster of three with one member at a time killed and started
// again. Every acknowledged append must be in the log once, at the sequence it was acknowledged
// with, each aggregate's versions in order with no gap. CI runs a few thousand appends;
// MESH_FAULT_APPENDS=100000 runs the full size (docs/operations.md).

describe('acknowledged appends while servers are killed', () => {
  const cleanup = cleanupsAfter(afterEach);

  it('keeps every acknowledged append once and in order, a single server killed every few seconds', async () => {
    const server = await scratchNats('kill-single');
    cleanup(() => server.remove());
    const t = await openTestLog({ url: server.url });
    cleanup(() => t.close());
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
    cleanup(() => cluster.remove());
    const t = await openTestLog({ url: cluster.url, replicas: 3 });
    cleanup(() => t.close());
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
