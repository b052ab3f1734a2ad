import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { JetStreamEventLog } from '../../src/adapters/eventlog/jetstream-log.js';
import { DeclarationPublisher } from '../../src/controller/declaration-publisher.js';
import { overviewSource } from '../../src/controller/http/overview-source.js';
import { MeshService } from '../../src/controller/mesh-service.js';
import { meshEventRegistry } from '../../src/domain/registry.js';
import { fixtureManifest } from '../helpers/given.js';
import { testDatabaseUrl } from '../helpers/database.js';
import { openTestMesh, waitFor, type TestMesh } from '../helpers/test-mesh.js';

const assign = (module: string, node: string, options: Partial<{ hold: string[]; values: Record<string, string> }> = {}) =>
  ({ type: 'assign', module, node, hold: options.hold ?? [], pins: {}, values: options.values ?? {}, placements: {} }) as const;

describe('declarations derived from the log and published on NODES', () => {
  let t: TestMesh;
  beforeEach(async () => {
    t = await openTestMesh();
    for (const name of ['nats', 'vault', 'postgres', 'distribution', 'gitea']) await t.run({ type: 'register-module', manifest: fixtureManifest(name) });
    for (const node of ['novox', 'lab1']) await t.run({ type: 'add-node', node });
  });
  afterEach(async () => t.close());

  it('publishes a node’s declaration when what it must run changes, with a growing sequence, and only then', async () => {
    await t.startController();
    const empty = await waitFor('lab1’s first declaration', () => t.declarationOf('lab1'));
    expect(empty).toMatchObject({ node: 'lab1', sequence: 1, assignments: [] });

    const assigned = await t.run(assign('distribution', 'lab1', { hold: ['mesh-artifact-store'] }));
    const second = await waitFor('lab1’s second declaration', async () => {
      const d = await t.declarationOf('lab1');
      return d && d.sequence === 2 ? d : undefined;
    });
    expect(second.derivedFromSeq).toBeGreaterThanOrEqual(assigned.seq);
    expect(second.assignments.map((a) => [a.module, a.seats])).toEqual([['distribution', ['mesh-artifact-store']]]);

    // A change on another node leaves lab1's declaration alone.
    const before = await t.nodesHead();
    await t.run(assign('nats', 'novox', { hold: ['mesh-broker'] }));
    await waitFor('novox’s declaration with nats', async () => (await t.declarationOf('novox'))?.assignments.length === 1);
    expect((await t.declarationOf('lab1'))?.sequence).toBe(2);
    expect(await t.nodesHead()).toBe(before + 1);
  });

  it('composes every node once after catching up, then only the nodes a change reaches, and none for a change that is no declaration input', async () => {
    await t.startController();
    await waitFor('the first full pass', async () => (t.passes.at(-1)?.composed === 2 ? true : undefined));
    // A module with no requirements on lab1 reaches lab1 alone.
    const assigned = await t.run(assign('distribution', 'lab1'));
    const pass = await waitFor('the pass after the assignment', async () => t.passes.find((p) => p.seq >= assigned.seq));
    expect({ composed: pass.composed, published: pass.published }).toEqual({ composed: 1, published: ['lab1'] });
    // An operator added is no declaration input: a pass may run (the bus users), composing nothing.
    const passesBefore = t.passes.length;
    const added = await t.run({ type: 'add-operator', operator: 'ada', publicKey: t.controllerKey.publicKey });
    await waitFor('the pass after the operator', async () => t.passes.slice(passesBefore).find((p) => p.seq >= added.seq));
    expect(t.passes.slice(passesBefore).reduce((n, p) => n + p.composed, 0)).toBe(0);
  });

  it('still sends a declaration that shrinks to empty', async () => {
    await t.startController();
    await t.run(assign('distribution', 'lab1'));
    const declared = await waitFor('the assignment declared', async () => {
      const d = await t.declarationOf('lab1');
      return d?.assignments.length === 1 ? d : undefined;
    });
    await t.run({ type: 'unassign', module: 'distribution', node: 'lab1' });
    const emptied = await waitFor('the empty declaration', async () => {
      const d = await t.declarationOf('lab1');
      return d && d.assignments.length === 0 && d.sequence > declared.sequence ? d : undefined;
    });
    expect(emptied.sequence).toBe(declared.sequence + 1);
  });

  it('re-publishes nothing unchanged when the controller starts again and derives everything anew', async () => {
    const first = await t.startController();
    await t.run(assign('distribution', 'lab1'));
    await waitFor('declared', async () => (await t.declarationOf('lab1'))?.assignments.length === 1);
    await first.stop();
    const head = await t.nodesHead();
    await t.startController();
    await waitFor('a full pass of the new controller', async () => t.passes.at(-1)?.unchanged === 2);
    expect(await t.nodesHead()).toBe(head);
  });

  it('does not send a declaration that cannot be composed; the previous stands and the refusal is stated once', async () => {
    await t.startController();
    await t.run(assign('nats', 'novox', { hold: ['mesh-broker'] }));
    await t.run(assign('vault', 'novox', { hold: ['mesh-vault'] }));
    await t.run(assign('postgres', 'novox', { hold: ['mesh-store'] }));
    await t.run(assign('gitea', 'lab1', { hold: ['mesh-git'] }));
    const standing = await waitFor('gitea declared on lab1', async () => {
      const d = await t.declarationOf('lab1');
      return d?.assignments.some((a) => a.module === 'gitea') ? d : undefined;
    });

    // The vault goes: gitea's per-consumer database secret and postgres's superuser can no longer be answered.
    await t.run({ type: 'unassign', module: 'vault', node: 'novox' });
    const refusals = async () => {
      const found = [];
      for await (const event of t.log.read({ aggregate: 'node' })) if (event.type === 'declaration.refused') found.push(event);
      return found;
    };
    const stated = await waitFor('both refusals stated', async () => ((await refusals()).length === 2 ? refusals() : undefined));
    expect(stated.map((e) => (e.data as { node: string }).node).sort()).toEqual(['lab1', 'novox']);
    expect((stated.find((e) => (e.data as { node: string }).node === 'lab1')?.data as { unresolved: { what: string }[] }).unresolved.map((u) => u.what)).toEqual([
      'lab1/gitea requires db-secret (secret)',
    ]);
    expect((await t.declarationOf('lab1'))?.sequence).toBe(standing.sequence);

    // Another change in the mesh re-derives everything: the same refusal is not stated again.
    await t.run({ type: 'add-node', node: 'lab9' });
    await waitFor('lab9 declared', () => t.declarationOf('lab9'));
    expect(await refusals()).toHaveLength(2);

    // The overview (the page, `mesh status`) judges from its own fold of the log, which keeps the
    // refusals stated: each stands until a declaration derived after it is published.
    const pool = new pg.Pool({ connectionString: testDatabaseUrl('controller'), max: 1 });
    try {
      const refused = overviewSource({
        mesh: new MeshService(new JetStreamEventLog(t.nc, { stream: t.names.logStream, subjectPrefix: t.names.logPrefix, registry: meshEventRegistry() })),
        publisher: new DeclarationPublisher(t.nc, { nodesStream: t.names.nodesStream, prefix: t.names.prefix }),
        pool,
        statusSchema: `status_${t.names.prefix}`,
        heartbeatThresholdMs: 15_000,
      });
      const uncomposable = async () => (await refused()).problems.filter((p) => p.includes('cannot be composed')).map((p) => p.split(':')[0]);
      expect(await uncomposable()).toEqual(['lab1', 'novox']);
      // gitea leaves lab1: its declaration composes again, and one derived after the refusal is sent.
      await t.run({ type: 'unassign', module: 'gitea', node: 'lab1' });
      await waitFor('lab1 declared without gitea', async () => (await t.declarationOf('lab1'))?.assignments.length === 0);
      expect(await uncomposable()).toEqual(['novox']);
    } finally {
      await pool.end();
    }
  });
});
