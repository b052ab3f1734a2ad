import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import pg from 'pg';
import { meshHome } from '../../src/config.js';
import { hostKey } from '../../src/adapters/enrolment-client.js';
import { newIdentity } from '../../src/adapters/identity.js';
import { signedMessage } from '../../src/agent/report-signature.js';
import type { ImpersonationMetrics, SpeakerEntry } from '../../src/controller/speaker.js';
import { probeAimedReport } from '../../src/dev/probes/aimed-report.js';
import { hostInbox, personInbox } from '../../src/domain/bus/users.js';
import { aliveSubject, reportSubject, type Report } from '../../src/domain/reports/report.js';
import { testDatabaseUrl } from '../helpers/database.js';
import { enforcingBusMesh, type EnforcingBusMesh } from '../helpers/enforcing-bus.js';
import { fixtureManifest } from '../helpers/given.js';
import { uniqueName } from '../helpers/names.js';
import { testMeshNames, waitFor } from '../helpers/test-mesh.js';
import { reportFor } from '../controller/report-for.js';

// On nats-server 2.9 the server can be made to publish on `mesh.control.alpha.report` (a JetStream
// delivery or answer aimed there), so the subject alone does not prove that host alpha spoke. Here
// the harness publishes on alpha's subject what such a delivery would carry — a report for alpha
// signed by beta's key, or not signed at all — and the controller must act on none of it; alpha's
// own signed report is acted on. Then the aimed delivery itself, as an operator, through the probe.

describe('a report or heartbeat counts only when its node signed it', () => {
  const dir = join(meshHome(), 'tmp', uniqueName('signed-'));
  const findings: { entry: SpeakerEntry; identity: string }[] = [];
  const impersonation: ImpersonationMetrics = { impersonationRefused: (entry, identity) => void findings.push({ entry, identity }) };
  const names = testMeshNames(uniqueName('sig'));
  const statusSchema = `status_${names.prefix}`;
  let m: EnforcingBusMesh;
  let pool: pg.Pool;
  const hosts = new Map<string, NatsConnection>();
  const host = (node: string): NatsConnection => hosts.get(node) ?? (() => { throw new Error(`host ${node} is not connected`); })();
  const keyOf = (node: string) => hostKey(join(dir, node));
  const onAlphas = (kind: 'report' | 'alive') => `${names.prefix}.control.alpha.${kind}`;
  const refusedOnAlphas = (kind: 'report' | 'alive') => findings.filter((f) => f.entry === (kind === 'alive' ? 'heartbeat' : 'report') && f.identity === `whoever published on ${onAlphas(kind)}`).length;
  const factsAbout = async (node: string): Promise<string[]> => {
    const facts: string[] = [];
    for await (const event of m.t.log.read()) if (event.type.startsWith('fact.') && (event.data as { node?: string }).node === node) facts.push(event.type);
    return facts;
  };
  const controlDrained = () => waitFor('CONTROL drained', async () => (await m.t.jsm.streams.info(m.t.names.controlStream)).state.messages === 0);
  const heartbeatOf = async (node: string): Promise<Date | null> => {
    const rows = await pool.query<{ heartbeat_at: Date | null }>(`SELECT heartbeat_at FROM "${statusSchema}".node_status WHERE node = $1`, [node]).catch(() => ({ rows: [] }));
    return rows.rows[0]?.heartbeat_at ?? null;
  };
  let crashLooping: Report;

  beforeAll(async () => {
    mkdirSync(dir, { recursive: true });
    pool = new pg.Pool({ connectionString: testDatabaseUrl('controller'), max: 1 });
    m = await enforcingBusMesh(join(dir, 'bus'), names, { impersonation, schema: statusSchema });
    await m.t.run({ type: 'register-module', manifest: fixtureManifest('distribution') });
    for (const node of ['alpha', 'beta']) {
      await m.t.run({ type: 'add-node', node, address: '127.0.0.1' });
      await m.enrolNode(node, join(dir, node), await m.issueToken(node));
      hosts.set(node, await m.connectWhenKnown(`host ${node}`, { key: keyOf(node), inbox: hostInbox(node) }));
    }
    await m.t.run({ type: 'assign', module: 'distribution', node: 'alpha', hold: [], pins: {}, values: {}, placements: {} });
    const declaration = await waitFor('alpha declared with distribution', async () => {
      const d = await m.t.declarationOf('alpha');
      return d?.assignments.length === 1 ? d : undefined;
    });
    crashLooping = reportFor(declaration, {
      resources: declaration.assignments.flatMap((a) => a.resources.map((r) => ({ key: r.key, module: r.module, kind: r.kind, outcome: 'crash-looping' as const, reason: 'exited 1', restarts: 5 }))),
      running: [],
    });
  }, 120_000);
  afterAll(async () => {
    await m?.close();
    await pool?.end();
    rmSync(dir, { recursive: true, force: true });
  });

  it("refuses a report for alpha signed by beta's key, and an unsigned one, on alpha's own subject: no fact, each refusal counted; alpha's own is acted on", async () => {
    // What an aimed delivery carries: the bytes of a report naming alpha, on alpha's subject, not signed by alpha.
    const byBeta = signedMessage('report', keyOf('beta'), JSON.stringify(crashLooping));
    await jetstream(host('alpha')).publish(reportSubject('alpha', names.prefix), byBeta.body, { headers: byBeta.headers });
    await jetstream(host('alpha')).publish(reportSubject('alpha', names.prefix), JSON.stringify({ ...crashLooping, at: new Date().toISOString() }));
    await controlDrained();
    await waitFor('both refusals counted', async () => refusedOnAlphas('report') >= 2);
    expect(await factsAbout('alpha')).toEqual([]);

    // The same report signed by alpha is acted on: the check above could have failed.
    const byAlpha = signedMessage('report', keyOf('alpha'), JSON.stringify(crashLooping));
    await jetstream(host('alpha')).publish(reportSubject('alpha', names.prefix), byAlpha.body, { headers: byAlpha.headers });
    await waitFor('the crash-looping fact for alpha', async () => (await factsAbout('alpha')).includes('fact.crash-looping'));
    expect(refusedOnAlphas('report')).toBe(2);
  });

  it("does not count an unsigned or forged heartbeat as alpha being alive; alpha's own signed one does", async () => {
    const beat = JSON.stringify({ node: 'alpha', capabilities: ['forged-kind'] });
    const byBeta = signedMessage('heartbeat', keyOf('beta'), beat);
    host('alpha').publish(aliveSubject('alpha', names.prefix), beat);
    host('alpha').publish(aliveSubject('alpha', names.prefix), byBeta.body, { headers: byBeta.headers });
    // a forged signature header of the right shape, over other bytes
    host('alpha').publish(aliveSubject('alpha', names.prefix), beat, { headers: signedMessage('heartbeat', keyOf('alpha'), '{}').headers });
    await host('alpha').flush();
    await waitFor('the three refusals counted', async () => refusedOnAlphas('alive') >= 3);
    // Heartbeats are written every second: two passes, and alpha was never heard from.
    await new Promise((r) => setTimeout(r, 2_500));
    expect(await heartbeatOf('alpha')).toBeNull();
    expect(await factsAbout('alpha')).not.toContain('fact.capabilities');

    const byAlpha = signedMessage('heartbeat', keyOf('alpha'), JSON.stringify({ node: 'alpha' }));
    host('alpha').publish(aliveSubject('alpha', names.prefix), byAlpha.body, { headers: byAlpha.headers });
    await waitFor("alpha's heartbeat recorded", async () => (await heartbeatOf('alpha')) ?? undefined);
  });

  it("the probe, as an operator, aims NODES' answers at alpha's report subject: the server publishes there, the controller refuses it unsigned", async () => {
    const dora = { operator: 'dora', ...newIdentity() };
    await m.t.run({ type: 'add-operator', operator: 'dora', publicKey: dora.publicKey });
    await m.connectWhenKnown('operator dora', { key: dora, inbox: personInbox('dora') });
    const before = refusedOnAlphas('report');
    const factsBefore = await factsAbout('alpha');
    const outcomes = await probeAimedReport({ url: m.url, wire: { ...names, eventsStream: '' }, operator: { name: 'dora', key: dora }, node: 'alpha' });
    expect(outcomes).toHaveLength(1);
    expect(outcomes[0]).toMatchObject({ refused: true });
    expect(outcomes[0]?.detail).toMatch(/deliver_subject .*control\.alpha\.report; no new fact for alpha/);
    // The delivery really reached CONTROL as if alpha had published it, and was refused for want of alpha's signature.
    await waitFor('the aimed delivery refused', async () => refusedOnAlphas('report') > before);
    expect(await factsAbout('alpha')).toEqual(factsBefore);
  }, 60_000);
});
