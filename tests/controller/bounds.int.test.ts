import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { DeclarationPublisher } from '../../src/controller/declaration-publisher.js';
import { overviewSource } from '../../src/controller/http/overview-source.js';
import { MeshService } from '../../src/controller/mesh-service.js';
import { readNodeStatus } from '../../src/controller/node-status.js';
import type { Declaration } from '../../src/domain/declarations/declaration.js';
import type { StoredEvent } from '../../src/domain/events/envelope.js';
import { factAggregate } from '../../src/domain/facts/events.js';
import type { Report } from '../../src/domain/reports/report.js';
import { testDatabaseUrl } from '../helpers/database.js';
import { fixtureManifest } from '../helpers/given.js';
import { openTestMesh, waitFor, type TestMesh } from '../helpers/test-mesh.js';
import { reportFor } from './report-for.js';
import { newIdentity, type Identity } from '../../src/adapters/identity.js';
import { enrolHost, publishSignedBeat, publishSignedReport } from '../helpers/host-keys.js';

// What a node says cannot grow the log without bound: every message is bounded where it enters,
// and a fact about a node is stated at most once per interval per kind, the newest kept. Ten
// thousand hostile heartbeats and reports from one node make a handful of commits, another node's
// report still becomes its fact meanwhile, and the flooding node is named in the overview (the
// page's and `mesh status`'s), not in the log.

const INTERVAL_MS = 2_000;
const KINDS = ['region', 'service', 'trust-anchor'];

describe('a node flooding the control plane grows the log by a bounded number of commits', () => {
  let t: TestMesh;
  let pool: pg.Pool;
  /** each node's host key: what the test signs its reports and heartbeats with, as its agent would */
  const hosts = new Map<string, Identity>();
  beforeEach(async () => {
    t = await openTestMesh();
    pool = new pg.Pool({ connectionString: testDatabaseUrl('controller'), max: 2 });
    await t.run({ type: 'register-module', manifest: fixtureManifest('distribution') });
    for (const node of ['lab1', 'lab2']) {
      await t.run({ type: 'add-node', node });
      hosts.set(node, await enrolHost(t, node));
      await t.run({ type: 'assign', module: 'distribution', node, hold: [], pins: {}, values: {}, placements: {} });
    }
    const controller = await t.startController();
    await t.startIngester(controller, { factIntervalMs: INTERVAL_MS });
  });
  afterEach(async () => {
    await t.close();
    await pool.end();
  });

  const declared = (node: string) =>
    waitFor(`${node} declared with distribution`, async () => {
      const d = await t.declarationOf(node);
      return d?.assignments.length === 1 ? d : undefined;
    });
  const factsOf = async (node: string): Promise<StoredEvent[]> => (await t.log.readAggregate(factAggregate(node))).events;
  const controlEmpty = async () => (await t.jsm.streams.info(t.names.controlStream)).state.messages === 0;
  const keyOf = (node: string): Identity => hosts.get(node) ?? newIdentity();
  const beat = (node: string, body: unknown) => publishSignedBeat(t.nc, t.names.prefix, node, keyOf(node), body);
  const report = (node: string, body: unknown) => publishSignedReport(t.nc, t.names.prefix, node, keyOf(node), body);
  const flapping = (declaration: Declaration, i: number): Report => {
    const report = reportFor(declaration, { running: [] });
    return { ...report, resources: report.resources.map((r, n) => (n === 0 ? { ...r, outcome: 'refused' as const, reason: `flap ${i}` } : r)) };
  };

  it('10,000 hostile heartbeats and reports from lab1 make a handful of commits, keep the newest, let lab2 through and name lab1', async () => {
    const [one, two] = [await declared('lab1'), await declared('lab2')];
    const before = await t.log.headSeq();
    const started = Date.now();

    // 5,000 heartbeats, each naming a new set of capabilities, and 10 far too large.
    let newest: string[] = [];
    for (let i = 0; i < 5_000; i++) {
      newest = [...KINDS, `kind-${i}`];
      beat('lab1', { node: 'lab1', capabilities: newest });
      if (i % 500 === 0) beat('lab1', { node: 'lab1', capabilities: Array.from({ length: 900 }, (_, n) => `k${n}-${'x'.repeat(1_000)}`) });
    }
    // 5,000 reports about lab1's outstanding declaration, each refusing a resource for a new reason,
    // ten of them out of bounds (a reason far too long, a report too large); lab2's own report halfway.
    const reports: Promise<unknown>[] = [];
    let lab2Published = 0;
    for (let i = 0; i < 5_000; i++) {
      const flapped = flapping(one, i);
      if (i % 1_000 === 1) flapped.resources[0] = { ...flapped.resources[0]!, reason: 'r'.repeat(5_000) };
      if (i % 1_000 === 2) flapped.resources = Array.from({ length: 300 }, (_, n) => ({ key: `distribution/x${n}`, module: 'distribution', kind: 'file', outcome: 'refused' as const, reason: 'z'.repeat(1_000), restarts: null }));
      reports.push(report('lab1', flapped));
      if (i === 2_500) {
        await Promise.all(reports.splice(0));
        await report('lab2', reportFor(two));
        lab2Published = Date.now();
      }
      if (reports.length >= 500) await Promise.all(reports.splice(0));
    }
    await Promise.all(reports);
    await t.nc.flush();
    const floodMs = Date.now() - started;

    // Other nodes' facts flow meanwhile: lab2's report becomes its fact.
    const lab2Facts = await waitFor("lab2's applied fact", async () => ((await factsOf('lab2')).some((e) => e.type === 'fact.applied') ? factsOf('lab2') : undefined), 20_000);
    const lab2StatedAfterMs = Date.now() - lab2Published;

    // The newest of each kind is stated once its interval has passed, and then nothing moves.
    const lastReason = 'flap 4999';
    await waitFor('the newest values stated', async () => {
      const facts = await factsOf('lab1');
      const capabilities = facts.filter((e) => e.type === 'fact.capabilities').at(-1)?.data as { capabilities: string[] } | undefined;
      const refused = facts.filter((e) => e.type === 'fact.refused').at(-1)?.data as { reason: string } | undefined;
      return JSON.stringify(capabilities?.capabilities) === JSON.stringify([...newest].sort()) && refused?.reason === lastReason && (await controlEmpty());
    });
    await new Promise((r) => setTimeout(r, INTERVAL_MS + 500));
    const after = await t.log.headSeq();

    const lab1 = await factsOf('lab1');
    const capabilityFacts = lab1.filter((e) => e.type === 'fact.capabilities');
    const refusedFacts = lab1.filter((e) => e.type === 'fact.refused');
    // At most one commit per kind per interval, the first at once and the newest after the flood:
    // two kinds (capabilities, refusals) over the time the flood took, and lab2's one fact.
    const perKind = 2 + Math.ceil(floodMs / INTERVAL_MS);
    process.stderr.write(`flood of 10,000 messages took ${floodMs} ms; the log grew by ${after - before} commits (bound ${2 * perKind + 1}); lab2's fact stated ${lab2StatedAfterMs} ms after its report\n`);
    expect(capabilityFacts.length).toBeLessThanOrEqual(perKind);
    expect(refusedFacts.length).toBeLessThanOrEqual(perKind);
    expect(after - before).toBeLessThanOrEqual(2 * perKind + 1);
    expect(after - before).toBeLessThan(40);
    // Nothing out of bounds was stated: no capability of the oversized heartbeats, no reason too long.
    expect(capabilityFacts.flatMap((e) => (e.data as { capabilities: string[] }).capabilities).every((c) => c.length <= 32)).toBe(true);
    expect(refusedFacts.every((e) => (e.data as { reason: string }).reason.startsWith('flap '))).toBe(true);
    expect(lab2Facts.map((e) => e.type)).toEqual(['fact.applied']);

    // Named, with what it said beyond its budget, in the node status table and the overview; lab2 is not.
    const statusSchema = `status_${t.names.prefix}`;
    const named = await waitFor('lab1 named', async () => (await readNodeStatus(pool, statusSchema)).find((r) => r.node === 'lab1' && r.overBudget?.line.includes('messages refused'))?.overBudget ?? undefined);
    expect(named.line).toMatch(/fact\.capabilities values, [\d,]+ fact\.refused values never stated/);
    expect(named.line).toMatch(/\d+ messages refused, the last: /);
    const overview = await overviewSource({ mesh: new MeshService(t.newLog()), publisher: new DeclarationPublisher(t.nc, { nodesStream: t.names.nodesStream, prefix: t.names.prefix }), pool, statusSchema, heartbeatThresholdMs: 15_000 })();
    expect(overview.healthy).toBe(false);
    expect(overview.problems).toContainEqual(expect.stringMatching(/^lab1: over its budget since \S+: changed its mind faster than one fact of a kind per 2 s/));
    expect(overview.nodes.find((n) => n.node === 'lab1')?.overBudget).toContain('messages refused');
    expect(overview.nodes.find((n) => n.node === 'lab2')?.overBudget).toBeNull();
    expect(overview.problems.filter((p) => p.startsWith('lab2:'))).toEqual([]);
  }, 120_000);

  it('refuses a report or heartbeat out of bounds outright: nothing stated, nothing redelivered, the node named', async () => {
    const one = await declared('lab1');
    const before = await t.log.headSeq();
    const huge = reportFor(one, { resources: Array.from({ length: 300 }, (_, n) => ({ key: `distribution/x${n}`, module: 'distribution', kind: 'file', outcome: 'refused' as const, reason: 'z'.repeat(1_000), restarts: null })) });
    await report('lab1', huge);
    await report('lab1', { ...reportFor(one), at: 'not a time' });
    beat('lab1', { node: 'lab1', capabilities: ['Region; DROP TABLE'] });
    await waitFor('the reports let go', controlEmpty);
    const named = await waitFor('lab1 named', async () => (await readNodeStatus(pool, `status_${t.names.prefix}`)).find((r) => r.node === 'lab1' && r.overBudget?.line.includes('3 messages refused'))?.overBudget ?? undefined);
    expect(named.line).toMatch(/the last: (a report|a heartbeat)/);
    expect(await t.log.headSeq()).toBe(before);
    expect(await factsOf('lab1')).toEqual([]);
  }, 60_000);
});
