import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { isWriter, openControllersMesh, type ControllerProcess } from '../helpers/controller-processes.js';
import { faultCount, p50AndMax, report, sleep } from '../helpers/faults.js';
import { uniqueName } from '../helpers/names.js';
import { waitFor } from '../helpers/test-mesh.js';

// The writer controller killed (SIGKILL) every few seconds while 32 clients send commands, each
// retried with its command id until it is answered: every command acknowledged is in the log
// exactly once, and no command is in it twice. A new controller is started after each kill, so a
// standby is always there to take over; how long each takeover took (from the kill to the next
// writer's own "serving as the mesh writer": lease taken, its parts started) is printed. MESH_FAULT_WRITER_KILLS sizes it.

const LEASE_MS = 3_000;
const KILLS = faultCount('MESH_FAULT_WRITER_KILLS', 4);
const CLIENTS = 32;

describe('the writer controller killed while clients send commands', () => {
  let mesh: Awaited<ReturnType<typeof openControllersMesh>>;

  beforeAll(async () => {
    mesh = await openControllersMesh({ leaseMs: LEASE_MS });
  });

  afterAll(async () => {
    await mesh.close();
  });

  it('keeps every acknowledged command exactly once; another controller takes over each time', async () => {
    const running: ControllerProcess[] = [await mesh.start(), await mesh.start()];
    await waitFor('a writer', async () => (running.some(isWriter) ? true : undefined), 30_000);

    const acknowledged = new Set<string>();
    let retries = 0;
    let refused = 0;
    let stop = false;
    const client = async (): Promise<void> => {
      while (!stop) {
        const commandId = uniqueName('cmd');
        const command = { type: 'add-node', node: uniqueName('n') };
        // Until answered: a timeout, no responder or "unavailable" while the lease moves is sent again as it was.
        for (let attempt = 1; ; attempt++) {
          const answer = await mesh.send(commandId, command, 10_000).catch(() => undefined);
          if (answer?.ok) {
            acknowledged.add(commandId);
            break;
          }
          if (answer && answer.error.code !== 'unavailable') {
            refused++;
            break;
          }
          retries++;
          if (attempt > 100) throw new Error(`command ${commandId} was not answered after ${attempt} tries`);
          await sleep(200);
        }
      }
    };
    const clients = Array.from({ length: CLIENTS }, client);

    const takeovers: number[] = [];
    try {
      for (let kill = 0; kill < KILLS; kill++) {
        await sleep(2_000);
        const writer = running.find(isWriter);
        if (!writer) throw new Error('no controller is the writer');
        const killedAt = Date.now();
        writer.child.kill('SIGKILL');
        running.splice(running.indexOf(writer), 1);
        const next = await waitFor('another controller to take over', async () => running.find((p) => p.servingSince() !== undefined), 30_000);
        takeovers.push((next.servingSince() ?? Date.now()) - killedAt);
        // A fresh standby for the next kill.
        running.push(await mesh.start());
      }
      await sleep(1_000);
    } finally {
      stop = true;
      await Promise.allSettled(clients);
    }
    await Promise.all(clients);

    const events = await mesh.logEvents();
    const perCommand = new Map<string, number>();
    for (const e of events) perCommand.set(e.commandId, (perCommand.get(e.commandId) ?? 0) + 1);
    const missing = [...acknowledged].filter((id) => !perCommand.has(id));
    const twice = [...acknowledged].filter((id) => (perCommand.get(id) ?? 0) > 1);
    const { p50, max } = p50AndMax(takeovers);
    report('writer controller killed while 32 clients send commands', {
      did: `${CLIENTS} clients, ${acknowledged.size} commands acknowledged (${retries} sends retried, ${refused} refused); the writer killed ${takeovers.length} times, a standby started after each`,
      found: `${missing.length} acknowledged commands missing from the log, ${twice.length} in it more than once`,
      takeover: `p50 ${p50} ms, max ${max} ms (each: ${takeovers.join(', ')} ms; lease ${LEASE_MS} ms)`,
    });
    expect(takeovers).toHaveLength(KILLS);
    expect(acknowledged.size).toBeGreaterThan(0);
    expect(refused).toBe(0);
    expect(missing).toEqual([]);
    expect(twice).toEqual([]);
  });
});
