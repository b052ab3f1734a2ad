import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { createOperatorKey } from '../../src/adapters/operator-keys.js';
import { RefusedCommandStore } from '../../src/adapters/nats/refused-commands.js';
import { identityFromEnv } from '../../src/adapters/nats/connect.js';
import { meshHome } from '../../src/config.js';
import { CommandDispatcher } from '../../src/controller/command-dispatcher.js';
import { MeshService } from '../../src/controller/mesh-service.js';
import { ToolServer } from '../../src/controller/tool-server.js';
import { probeCommandReplay } from '../../src/dev/probes/command-replay.js';
import { testNatsUrl } from '../helpers/log.js';
import { uniqueName } from '../helpers/names.js';
import { openTestMesh, type TestMesh } from '../helpers/test-mesh.js';

// The probe `npm run probe:security` runs against a live mesh, run here against a test mesh's
// controller tools: every attack on a signature's time, purpose and command id is tried for real
// and refused for its own reason; and against tools that keep no spent ids, the replays are let
// through — the probe can tell.

describe('the command replay probe', () => {
  let t: TestMesh;
  const dir = join(meshHome(), 'tmp', uniqueName('replay-probe-'));
  const servers: ToolServer[] = [];

  beforeAll(async () => {
    t = await openTestMesh();
  });
  afterAll(async () => {
    for (const server of servers) server.stop();
    await t.jsm.streams.delete(`${t.names.logStream}_REFUSED`).catch(() => undefined);
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const probe = async (operator: string, spent: boolean) => {
    const key = createOperatorKey(join(dir, `${operator}.key`), operator);
    await t.run({ type: 'add-operator', operator, publicKey: key.publicKey });
    const prefix = `${t.names.prefix}${operator}`;
    const dispatcher = new CommandDispatcher(new MeshService(t.newLog()), spent ? { spent: new RefusedCommandStore(t.nc, { logStream: t.names.logStream, prefix: t.names.prefix }) } : {});
    const server = new ToolServer(t.nc, dispatcher, { prefix, logger: pino({ level: 'silent' }) });
    server.start();
    servers.push(server);
    const bus = identityFromEnv();
    return probeCommandReplay({ url: testNatsUrl(), wire: { prefix }, operator: { name: operator, key }, ...(bus ? { bus } : {}) });
  };

  it('sees every attack refused for its own reason', async () => {
    const outcomes = await probe('ada', true);
    expect(outcomes.map((o) => [o.attack, o.refused, o.untried ?? false])).toEqual([
      ['a command signed in 2001', true, false],
      ['a command signed in 2099', true, false],
      ["a plan's signature sent to carry the command out", true, false],
      ["a command's signature sent as a plan", true, false],
      ['a refused command id sent again (the same bytes)', true, false],
      ['a refused command id sent again (signed afresh)', true, false],
    ]);
    expect(outcomes[0]?.detail).toContain('signed at 2001-09-09T01:46:40.000Z');
    expect(outcomes[1]?.detail).toContain('the mesh accepts commands signed within 5 minutes');
    expect(outcomes[2]?.detail).toContain('made for a plan');
    expect(outcomes[4]?.detail).toContain('a command id that was refused is spent');
  });

  it('reports the replays let through by a controller that keeps no spent ids', async () => {
    const outcomes = await probe('grace', false);
    const replays = outcomes.filter((o) => o.attack.startsWith('a refused command id'));
    expect(replays.map((o) => o.refused)).toEqual([false, false]);
    expect(replays[0]?.detail).toContain('refused, but not for its spent command id');
  });
});
