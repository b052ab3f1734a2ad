import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { meshHome } from '../../src/config.js';
import { hostKey, tokenBusIdentity } from '../../src/adapters/enrolment-client.js';
import { newIdentity } from '../../src/adapters/identity.js';
import { signCommand, type OperatorKey } from '../../src/adapters/operator-keys.js';
import { signedMessage } from '../../src/agent/report-signature.js';
import { newKeyPair } from '../../src/adapters/sealing.js';
import { PrometheusMetrics } from '../../src/adapters/prometheus-metrics.js';
import type { ImpersonationMetrics, SpeakerEntry } from '../../src/controller/speaker.js';
import { probeImpersonation } from '../../src/dev/probes/impersonation.js';
import { toolSubject, type ToolAnswer } from '../../src/controller/tool-server.js';
import { busIdentityToolSubject } from '../../src/domain/bus/module-identity.js';
import { hostInbox, personInbox } from '../../src/domain/bus/users.js';
import { enrolToolSubject } from '../../src/domain/nodes/enrol-wire.js';
import { nodeNamed } from '../../src/domain/nodes/state.js';
import { aliveSubject, reportSubject } from '../../src/domain/reports/report.js';
import type { Problem } from '../../src/domain/refusal.js';
import { enforcingBusMesh, type EnforcingBusMesh } from '../helpers/enforcing-bus.js';
import { fixtureManifest } from '../helpers/given.js';
import { uniqueName } from '../helpers/names.js';
import { testMeshNames, waitFor } from '../helpers/test-mesh.js';
import { reportFor } from '../controller/report-for.js';

// The attack found on a fresh mesh: host beta, on its own subject, sent a report whose body said
// it was alpha, and the controller stated alpha's greeter crash-looping. On a bus whose users are
// the ones the mesh composes, each identity here sends the forged message on the subject it may
// publish on, and the test asserts that nothing was acted on and that the finding was made —
// then sends the same message as the identity it names, and sees it acted on.

describe('each identity speaks only for itself', () => {
  const dir = join(meshHome(), 'tmp', uniqueName('impersonation-'));
  const findings: { entry: SpeakerEntry; identity: string }[] = [];
  // What the controller process counts, and serves on /metrics: the probe reads its refusals there.
  const prometheus = new PrometheusMetrics();
  const impersonation: ImpersonationMetrics = {
    impersonationRefused: (entry, identity) => {
      findings.push({ entry, identity });
      prometheus.impersonationRefused(entry, identity);
    },
  };
  let m: EnforcingBusMesh;
  const hosts = new Map<string, NatsConnection>();
  const found = (entry: SpeakerEntry, identity: string) => waitFor(`the ${entry} finding about ${identity}`, async () => findings.some((f) => f.entry === entry && f.identity === identity));
  const factsAbout = async (node: string): Promise<string[]> => {
    const facts: string[] = [];
    for await (const event of m.t.log.read()) if (event.type.startsWith('fact.') && (event.data as { node?: string }).node === node) facts.push(event.type);
    return facts;
  };
  const controlDrained = () => waitFor('CONTROL drained', async () => (await m.t.jsm.streams.info(m.t.names.controlStream)).state.messages === 0);

  beforeAll(async () => {
    mkdirSync(dir, { recursive: true });
    m = await enforcingBusMesh(join(dir, 'bus'), testMeshNames(uniqueName('imp')), { impersonation });
    for (const name of ['distribution', 'local-bus', 'audit-logger']) await m.t.run({ type: 'register-module', manifest: fixtureManifest(name) });
    for (const node of ['alpha', 'beta']) {
      await m.t.run({ type: 'add-node', node, address: '127.0.0.1' });
      const stateDir = join(dir, node);
      await m.enrolNode(node, stateDir, await m.issueToken(node));
      hosts.set(node, await m.connectWhenKnown(`host ${node}`, { key: hostKey(stateDir), inbox: hostInbox(node) }));
    }
    await m.t.run({ type: 'assign', module: 'distribution', node: 'alpha', hold: [], pins: {}, values: {}, placements: {} });
  }, 120_000);
  afterAll(async () => {
    await m?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Publishes `body` as `node`'s agent would: signed with its host key (report-signature.ts). */
  const signedPublish = async (nc: NatsConnection, kind: 'report' | 'heartbeat', node: string, subject: string, body: unknown): Promise<void> => {
    const signed = signedMessage(kind, hostKey(join(dir, node)), JSON.stringify(body));
    if (kind === 'report') await jetstream(nc).publish(subject, signed.body, { headers: signed.headers });
    else nc.publish(subject, signed.body, { headers: signed.headers });
  };
  const host = (node: string): NatsConnection => {
    const nc = hosts.get(node);
    if (!nc) throw new Error(`host ${node} is not connected`);
    return nc;
  };

  it("refuses host beta's report naming alpha on beta's own subject: no fact for alpha, the finding names beta; alpha's own is acted on", async () => {
    const declaration = await waitFor('alpha declared with distribution', async () => {
      const d = await m.t.declarationOf('alpha');
      return d?.assignments.length === 1 ? d : undefined;
    });
    const crashLooping = reportFor(declaration, {
      resources: declaration.assignments.flatMap((a) => a.resources.map((r) => ({ key: r.key, module: r.module, kind: r.kind, outcome: 'crash-looping' as const, reason: 'exited 1', restarts: 5 }))),
      running: [],
    });
    // Signed by beta, as its agent signs (a report counts only when its node signed it): the body is the lie.
    await signedPublish(host('beta'), 'report', 'beta', reportSubject('beta', m.t.names.prefix), crashLooping);
    // A report is acknowledged only once what it caused is in the log: drained, it has done all it will.
    await controlDrained();
    expect(await factsAbout('alpha')).toEqual([]);
    await found('report', 'host beta');

    // The same report from alpha itself is acted on: the check above could have failed.
    await signedPublish(host('alpha'), 'report', 'alpha', reportSubject('alpha', m.t.names.prefix), crashLooping);
    await waitFor('the crash-looping fact for alpha', async () => (await factsAbout('alpha')).includes('fact.crash-looping'));
  });

  it("refuses host beta's heartbeat naming alpha: alpha's capabilities are not stated; alpha's own are", async () => {
    const beat = { node: 'alpha', capabilities: ['forged-kind'] };
    await signedPublish(host('beta'), 'heartbeat', 'beta', aliveSubject('beta', m.t.names.prefix), beat);
    await found('heartbeat', 'host beta');
    // A heartbeat is core NATS: a flush round trip and a moment for anything it caused to be stated.
    await host('beta').flush();
    await new Promise((r) => setTimeout(r, 500));
    expect(await factsAbout('alpha')).not.toContain('fact.capabilities');

    await signedPublish(host('alpha'), 'heartbeat', 'alpha', aliveSubject('alpha', m.t.names.prefix), beat);
    await waitFor("alpha's capabilities stated", async () => (await factsAbout('alpha')).includes('fact.capabilities'));
  });

  it("refuses host beta asking for a module identity of alpha's, naming beta; alpha asking for its own is answered", async () => {
    await m.t.run({ type: 'assign', module: 'local-bus', node: 'alpha', hold: ['mesh-broker'], pins: {}, values: {}, placements: {} });
    await m.t.run({ type: 'assign', module: 'audit-logger', node: 'alpha', hold: [], pins: {}, values: {}, placements: {} });
    const ask = async (node: string) => (await host(node).request(busIdentityToolSubject(m.t.names.prefix), JSON.stringify({ node: 'alpha', module: 'audit-logger' }), { timeout: 10_000 })).json<{ ok: boolean; refused?: Problem[] }>();
    const forged = await ask('beta');
    expect(forged.ok).toBe(false);
    expect(forged.refused?.[0]?.why).toMatch(/^host beta speaks only for itself, and this bus-identity names node alpha/);
    await found('bus-identity', 'host beta');
    expect((await ask('alpha')).ok).toBe(true);
  });

  it('refuses a joining machine presenting another token than the one it connected as; that token stays unspent', async () => {
    for (const node of ['gamma', 'delta']) await m.t.run({ type: 'add-node', node, address: '127.0.0.1' });
    const mine = await m.issueToken('gamma');
    const theirs = await m.issueToken('delta');
    const asMine = await m.connectWhenKnown('joining gamma', tokenBusIdentity(mine));
    const request = (token: string, node: string) => JSON.stringify({ node, token, publicKey: newKeyPair().publicKey, busKey: newIdentity().publicKey });
    const forged = (await asMine.request(enrolToolSubject(m.t.names.prefix), request(theirs, 'delta'), { timeout: 10_000 })).json<{ ok: boolean; refused?: Problem[] }>();
    expect(forged.ok).toBe(false);
    const [mineId] = mine.split('.');
    expect(forged.refused?.[0]?.why).toMatch(new RegExp(`^enrolment token ${mineId} speaks only for itself`));
    await found('enrol', `enrolment token ${mineId}`);
    expect(nodeNamed((await m.t.mesh.current()).nodes, 'delta')?.busKey).toBeUndefined();

    const own = (await asMine.request(enrolToolSubject(m.t.names.prefix), request(mine, 'gamma'), { timeout: 10_000 })).json<{ ok: boolean }>();
    expect(own.ok).toBe(true);
  });

  it("refuses operator bob relaying a command ada signed; ada's own call is carried out", async () => {
    m.t.startTools();
    const key = (operator: string): OperatorKey => ({ operator, ...newIdentity() });
    const ada = key('ada');
    const bob = key('bob');
    for (const operator of [ada, bob]) await m.t.run({ type: 'add-operator', operator: operator.operator, publicKey: operator.publicKey });
    const asBob = await m.connectWhenKnown('operator bob', { key: bob, inbox: personInbox('bob') });
    const asAda = await m.connectWhenKnown('operator ada', { key: ada, inbox: personInbox('ada') });
    const signed = signCommand(ada, `relay-${randomBytes(4).toString('hex')}`, { type: 'add-node', node: 'epsilon' }, new Date());
    const call = async (nc: NatsConnection) => (await nc.request(toolSubject('add-node', m.t.names.prefix), JSON.stringify(signed), { timeout: 10_000 })).json<ToolAnswer>();
    const relayed = await call(asBob);
    expect(relayed.ok).toBe(false);
    if (!relayed.ok) expect(relayed.refused[0]?.why).toMatch(/^operator bob speaks only for itself, and this tool names operator ada/);
    await found('tool', 'operator bob');
    expect(nodeNamed((await m.t.mesh.current()).nodes, 'epsilon')).toBeUndefined();

    expect((await call(asAda)).ok).toBe(true);
    expect(nodeNamed((await m.t.mesh.current()).nodes, 'epsilon')).toBeDefined();
  });

  it('the security probe, as host beta, sees each attack on alpha refused by the controller and read back from /metrics and the log', async () => {
    const server: Server = createServer((_request, response) => void prometheus.registry.metrics().then((text) => response.end(text)));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const carol: OperatorKey = { operator: 'carol', ...newIdentity() };
      await m.t.run({ type: 'add-operator', operator: 'carol', publicKey: carol.publicKey });
      await m.connectWhenKnown('operator carol', { key: carol, inbox: personInbox('carol') });
      const names = m.t.names;
      const outcomes = await probeImpersonation({
        url: m.url,
        wire: { ...names, eventsStream: '' },
        host: { node: 'beta', key: hostKey(join(dir, 'beta')), otherNode: 'alpha' },
        operator: { name: 'carol', key: carol },
        httpUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      });
      expect(outcomes.map((o) => [o.attack, o.refused])).toEqual([
        ["host beta reports, on its own subject, that alpha's modules are crash-looping", true],
        ['host beta says, in its own heartbeat, that alpha has capabilities it never said', true],
        ["host beta asks for a module identity of alpha's", true],
      ]);
      expect(outcomes[0]?.detail).toMatch(/about alpha's outstanding declaration \d+: mesh_impersonation_refused_total\{entry="report",identity="host beta"\} went from 1 to 2, and no fact for alpha was stated$/);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
