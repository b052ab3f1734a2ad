import { afterAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { projectRoot } from '../../src/config.js';
import { appendUnderKills, expectKeptAll, judge, KILL_EVERY_MS, WRITERS } from '../helpers/append-faults.js';
import { cleanupsAfter, report, sleep } from '../helpers/faults.js';
import { openTestLog } from '../helpers/log.js';
import { canMakeNamespaces, netnsCluster } from '../helpers/netns-cluster.js';

// A partition, as Jepsen makes one: three servers in network namespaces of the test's own, joined
// by veth pairs to a bridge; the third member's link is cut and restored every few seconds while
// appends go on through the other two. The majority goes on (every acknowledged append is in the
// log once, in order, after healing); the minority accepts no append while it is cut off: a client
// in its namespace, publishing through it alone, is acknowledged only while it is joined.

/** An acknowledgement this long after the cut may still be one sent before it. */
const CUT_GRACE_MS = 1_500;

describe('a partition of a three-server cluster', () => {
  const cleanup = cleanupsAfter(afterAll);

  it('the majority goes on and keeps every acknowledged append; the cut-off member acknowledges nothing', async () => {
    // CI runs as root; a run without it cannot make the namespaces and says so rather than pass.
    expect({ root: canMakeNamespaces(), why: 'network namespaces and veth pairs need root' }).toEqual({ root: true, why: 'network namespaces and veth pairs need root' });
    const cluster = await netnsCluster();
    cleanup(() => cluster.remove());
    const minority = 2;
    const t = await openTestLog({ url: [cluster.url(0), cluster.url(1)].join(','), replicas: 3 });
    cleanup(() => t.close());

    // A replicated stream the minority's client publishes to, beside the log.
    const probeSubject = `probe.${cluster.id}`;
    const admin = await connect({ servers: cluster.url(0) });
    cleanup(() => admin.close());
    await (await jetstreamManager(admin)).streams.add({ name: `PROBE_${cluster.id}`, subjects: [probeSubject], num_replicas: 3 });
    const tries: { at: number; acked?: number; ackedAt?: number; refused?: string }[] = [];
    const appender: ChildProcess = spawn('ip', ['netns', 'exec', cluster.namespace(minority), process.execPath, '--import', 'tsx', join(projectRoot, 'tests/faults/fixtures/minority-appender.ts'), cluster.url(minority), probeSubject], {
      cwd: projectRoot,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    cleanup(async () => appender.kill('SIGKILL'));
    createInterface({ input: appender.stdout as NonNullable<ChildProcess['stdout']> }).on('line', (line) => tries.push(JSON.parse(line) as (typeof tries)[number]));

    const cuts: { from: number; to: number }[] = [];
    const run = await appendUnderKills(t, async () => {
      const from = Date.now();
      cluster.cut(minority);
      await sleep(KILL_EVERY_MS);
      cluster.heal(minority);
      cuts.push({ from, to: Date.now() });
      await cluster.ready();
    });
    await sleep(2_000);
    appender.kill('SIGKILL');

    const found = await judge(t, run);
    // Sent after the cut had settled and acknowledged before the link came back: accepted by a minority.
    const duringCut = tries.filter((x) => x.ackedAt !== undefined && cuts.some((c) => x.at >= c.from + CUT_GRACE_MS && x.ackedAt! < c.to));
    const ackedWhileJoined = tries.filter((x) => x.acked !== undefined).length - duringCut.length;
    report('a partition: one member of three cut off and healed again and again', {
      did: `${run.acknowledged.length} appends acknowledged at 3 replicas by ${WRITERS} writers through the majority in ${run.seconds.toFixed(0)} s; the third member cut off ${cuts.length} times for ${KILL_EVERY_MS} ms; ${tries.length} publishes tried through the cut-off member alone`,
      found: `${found.inLog} events in the log after healing; lost ${found.lost.length}, doubled ${found.doubled.length}, ${found.inOrder ? 'in order' : 'OUT OF ORDER'}; the cut-off member acknowledged ${duringCut.length} publishes while cut off, ${ackedWhileJoined} while joined`,
    });
    expectKeptAll(run, found);
    expect(duringCut).toEqual([]);
    // The minority's client works when joined: its silence while cut off is the partition's doing.
    expect(ackedWhileJoined).toBeGreaterThan(0);
  });
});
