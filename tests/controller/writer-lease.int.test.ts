import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { signCommand } from '../../src/adapters/operator-keys.js';
import { isWriter, openControllersMesh } from '../helpers/controller-processes.js';
import { uniqueName } from '../helpers/names.js';
import { waitFor } from '../helpers/test-mesh.js';

// Two `mesh controller` processes on one mesh: one is the writer (it holds the lease), the other
// stands by, serving reads and passing the commands it is sent on to the writer. Commands sent to
// either land once each. When the writer is killed, the other takes the lease within the lease's
// time and carries on; a command acknowledged before is not done again when retried.

const LEASE_MS = 3_000;

describe('one writer among controller processes', () => {
  let mesh: Awaited<ReturnType<typeof openControllersMesh>>;

  beforeAll(async () => {
    mesh = await openControllersMesh({ leaseMs: LEASE_MS });
  });

  afterAll(async () => {
    await mesh.close();
  });

  it('has one writer; commands sent to either controller land once each; the other takes over when the writer is killed', async () => {
    const { send, logEvents, ada } = mesh;
    const first = await mesh.start();
    const second = await mesh.start();
    await waitFor('one of them the writer', async () => (isWriter(first) || isWriter(second) ? true : undefined), 30_000);
    const [writer, standby] = isWriter(first) ? [first, second] : [second, first];
    expect(isWriter(standby)).toBe(false);
    await waitFor('the other standing by', async () => (standby.lines.some((l) => l.msg.startsWith('standing by')) ? true : undefined), 30_000);

    // Sixty commands at once, spread by the bus over both controllers' queue group.
    const commands = Array.from({ length: 60 }, () => ({ commandId: uniqueName('c'), node: uniqueName('n') }));
    const answers = await Promise.all(commands.map(({ commandId, node }) => send(commandId, { type: 'add-node', node })));
    expect(answers.filter((a) => !a.ok)).toEqual([]);
    let events = await logEvents();
    for (const { commandId } of commands) expect(events.filter((e) => e.commandId === commandId)).toHaveLength(1);

    // A command over the standby's HTTP API is decided by the writer too: the writer counts it, the standby does not.
    const decidedBy = async (p: { httpPort: number }): Promise<number> => {
      const text = await (await fetch(`http://127.0.0.1:${p.httpPort}/metrics`)).text();
      return Number(/^mesh_commands_total\{verb="add-node",outcome="ok"\} (\d+)$/m.exec(text)?.[1] ?? 0);
    };
    const [writerBefore, standbyBefore] = [await decidedBy(writer), await decidedBy(standby)];
    const viaHttp = { commandId: uniqueName('h'), node: uniqueName('http') };
    const response = await fetch(`http://127.0.0.1:${standby.httpPort}/api/tools/add-node`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(signCommand(ada, viaHttp.commandId, { type: 'add-node', node: viaHttp.node }, new Date())),
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ ok: true, duplicate: false });
    events = await logEvents();
    expect(events.filter((e) => e.commandId === viaHttp.commandId)).toHaveLength(1);
    expect(await decidedBy(writer)).toBe(writerBefore + 1);
    expect(await decidedBy(standby)).toBe(standbyBefore);

    // The writer dies; the other takes the lease once the last renewal expires.
    const killedAt = Date.now();
    writer.child.kill('SIGKILL');
    await waitFor('the standby became the writer', async () => (isWriter(standby) ? true : undefined), 30_000);
    const takeoverMs = (standby.writerSince() ?? Date.now()) - killedAt;
    process.stdout.write(`writer takeover after SIGKILL: ${takeoverMs} ms (lease ${LEASE_MS} ms)\n`);

    // A command acknowledged before is answered, not done again; a new one is carried out.
    const retried = await send(commands[0]!.commandId, { type: 'add-node', node: commands[0]!.node });
    expect(retried).toMatchObject({ ok: true, duplicate: true });
    const after = await send(uniqueName('c'), { type: 'add-node', node: uniqueName('after') });
    expect(after).toMatchObject({ ok: true, duplicate: false });
    events = await logEvents();
    expect(events.filter((e) => e.commandId === commands[0]!.commandId)).toHaveLength(1);
  });
});
