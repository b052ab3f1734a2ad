import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { join } from 'node:path';
import pg from 'pg';
import { hostKey } from '../../src/adapters/enrolment-client.js';
import { eventsStreamName } from '../../src/adapters/nats/control-streams.js';
import { createOperatorKey } from '../../src/adapters/operator-keys.js';
import { meshHome } from '../../src/config.js';
import { readNodeStatus } from '../../src/controller/node-status.js';
import { CAPABILITY_KINDS } from '../../src/domain/declarations/capabilities.js';
import { factAggregate } from '../../src/domain/facts/events.js';
import { personInbox, type BusWire } from '../../src/domain/bus/users.js';
import { probeLogGrowth } from '../../src/dev/probes/log-growth.js';
import { testDatabaseUrl } from '../helpers/database.js';
import { enforcingBusMesh, type EnforcingBusMesh } from '../helpers/enforcing-bus.js';
import { uniqueName } from '../helpers/names.js';
import { testMeshNames, waitFor } from '../helpers/test-mesh.js';

// The log-growth probe (`npm run probe:security`) against a mesh on a bus of its own whose only
// users are the ones the control plane composes: it floods as a node's real host identity and
// counts the log as an operator, as it does against the running local mesh.

describe('the log-growth probe, as a node flooding on an enforcing bus', () => {
  const dir = join(meshHome(), 'tmp', uniqueName('log-growth-'));
  const stateDir = join(dir, 'agent-beta');
  const names = testMeshNames(uniqueName('t'));
  const wire: BusWire = { ...names, eventsStream: eventsStreamName({ nodes: names.nodesStream, control: names.controlStream, prefix: names.prefix }) };
  let bus: EnforcingBusMesh | undefined;
  let pool: pg.Pool | undefined;

  beforeAll(async () => {
    bus = await enforcingBusMesh(dir, names, { factIntervalMs: 1_000, schema: `status_${names.prefix}` });
    pool = new pg.Pool({ connectionString: testDatabaseUrl('controller'), max: 1 });
    await bus.t.run({ type: 'add-node', node: 'beta', root: join(dir, 'nodes', 'beta'), address: '127.0.0.1' });
    await bus.startAgent('beta', stateDir);
  }, 60_000);
  afterAll(async () => {
    await bus?.close();
    await pool?.end();
  });

  it("refuses every attack: nothing out of bounds stated, a flood of capabilities stated within the budget, the agent's own after it, the node named", async () => {
    const t = (bus as EnforcingBusMesh).t;
    const capabilities = async () => (await t.log.readAggregate(factAggregate('beta'))).events.filter((e) => e.type === 'fact.capabilities').map((e) => (e.data as { capabilities: string[] }).capabilities);
    await waitFor("beta's agent's capabilities stated", async () => (await capabilities()).length === 1);
    const ada = createOperatorKey(join(dir, 'ada', 'operator.key'), 'ada');
    await t.run({ type: 'add-operator', operator: 'ada', publicKey: ada.publicKey });
    await (bus as EnforcingBusMesh).connectWhenKnown('ada', { key: ada, inbox: personInbox('ada') });

    const outcomes = await probeLogGrowth({ url: (bus as EnforcingBusMesh).url, wire, host: { node: 'beta', key: hostKey(stateDir) }, operator: { name: 'ada', key: ada }, intervalMs: 1_000 });
    expect(outcomes.map((o) => ({ attack: o.attack, refused: o.refused, untried: o.untried }))).toEqual([
      { attack: 'host beta sends 10 heartbeats of 900 one-kilobyte capabilities and 10 reports out of bounds', refused: true, untried: undefined },
      { attack: 'host beta sends 300 heartbeats, each with a new capabilities set', refused: true, untried: undefined },
    ]);
    expect(outcomes[0]?.detail).toMatch(/^beta's facts grew by 0 commits/);
    // What stands is what the agent applies, stated again after the flood; no set in between was stated but the first and the newest.
    const stated = await waitFor('the agent’s own capabilities stated again', async () => {
      const all = await capabilities();
      return JSON.stringify(all.at(-1)) === JSON.stringify([...CAPABILITY_KINDS].sort()) && all.length > 1 ? all : undefined;
    });
    expect(stated.length).toBeLessThanOrEqual(4);
    const status = await readNodeStatus(pool as pg.Pool, `status_${names.prefix}`);
    expect(status.find((r) => r.node === 'beta')?.overBudget?.line).toMatch(/fact\.capabilities values never stated.*20 messages refused/);
  }, 90_000);
});
