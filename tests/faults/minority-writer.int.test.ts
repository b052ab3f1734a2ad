import { afterAll, describe, expect, it } from '@jest/globals';
import { openControllersMesh } from '../helpers/controller-processes.js';
import { cleanupsAfter, report } from '../helpers/faults.js';
import { uniqueName } from '../helpers/names.js';
import { scratchCluster } from '../helpers/scratch-cluster.js';
import { waitFor } from '../helpers/test-mesh.js';

// The writer controller left on the minority side: it reaches one server of three, and the other
// two are killed. Nothing it is sent is acknowledged (the log needs a majority), and it stops
// writing within its lease's time, saying why (exit 6), instead of believing it still decides.

const LEASE_MS = 3_000;

describe('the writer on the minority side', () => {
  const cleanup = cleanupsAfter(afterAll);

  it('acknowledges nothing and stops, saying why, once its server is cut off from the majority', async () => {
    const cluster = await scratchCluster('minority');
    cleanup(() => cluster.remove());
    const mesh = await openControllersMesh({ leaseMs: LEASE_MS, url: cluster.url, replicas: 3, env: { MESH_NATS_URL: cluster.url.split(',')[0]!, MESH_NATS_CLUSTER_SIZE: '3' } });
    cleanup(() => mesh.close());
    // The majority back before the mesh is taken down, so its streams can be removed.
    cleanup(async () => {
      await Promise.all([cluster.restart(1), cluster.restart(2)]);
      await cluster.ready();
    });
    const writer = await mesh.start();
    await waitFor('the writer running every part', async () => (writer.writingSince() !== undefined ? true : undefined), 60_000);
    expect(await mesh.send(uniqueName('c'), { type: 'add-node', node: uniqueName('before') })).toMatchObject({ ok: true });

    const cutAt = Date.now();
    let exitAt: number | undefined;
    void writer.exited.then(() => (exitAt = Date.now()));
    await Promise.all([cluster.kill(1), cluster.kill(2)]);
    const during = await mesh.send(uniqueName('c'), { type: 'add-node', node: uniqueName('during') }, 10_000).catch((error: Error) => ({ ok: false as const, timedOut: error.message }));
    const code = await Promise.race([writer.exited, new Promise<'running'>((resolve) => setTimeout(() => resolve('running'), 30_000))]);
    const stoppedAfterMs = (exitAt ?? Date.now()) - cutAt;
    const said = writer.lines.find((l) => l.level >= 50 && /no longer the mesh writer/.test(l.msg)) as { msg: string; why?: string } | undefined;
    report('the writer on the minority side', {
      did: `the writer controller reaching one server of three; the two others killed (SIGKILL); a command sent to it then`,
      found: `the command ${during.ok ? 'ACKNOWLEDGED' : 'not acknowledged'}; the controller ${code === 'running' ? 'STILL RUNNING after 30 s' : `stopped with exit ${code} within ${stoppedAfterMs} ms of the cut`}, saying: ${said?.why ?? '(nothing)'}`,
    });
    expect(during.ok).toBe(false);
    expect(code).toBe(6);
    expect(said?.why).toMatch(/could not be renewed|another controller holds/);
  });
});
