import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type pg from 'pg';
import { allStatedHolds } from '../../src/domain/facts/state.js';
import { meshEventRegistry, type MeshEvent } from '../../src/domain/registry.js';
import { meshProjections } from '../../src/projections/catalogue.js';
import type { ProjectorSchemas } from '../../src/projections/control.js';
import { handlerOf } from '../../src/projections/projection.js';
import type { Projector } from '../../src/projections/projector.js';
import { ident } from '../../src/projections/sql.js';
import { openTestLog, type TestLog } from '../helpers/log.js';
import { dropSchemas, freshSchemas, openPool, startMeshTestProjector, waitServingAt } from './harness.js';
import { writeMeshLog, type GeneratedLog } from './mesh-log.js';

// The mesh's tables against the two things they must equal: the same projections rebuilt from
// scratch (row for row), and the mesh as evolveMesh folds the same log — the reference semantics.

const TABLES = ['audit', 'nodes', 'enrolment_tokens', 'modules', 'module_definitions', 'source_heads', 'builds', 'module_versions', 'module_rollouts', 'kept_versions', 'graph_edges', 'seats', 'seat_aliases', 'holdings', 'assignments', 'assignment_resolutions', 'facts', 'operators', 'node_holds', 'public_domains', 'public_names', 'consumer_answers', 'secrets', 'trust_root'];
/** Event types that change nothing evolveMesh keeps: only the audit index records them. */
const STATELESS = new Set(['mesh.initialised', 'log.voided']);

/** A rotation as the secrets table keeps it, as the slice does: the parties done as sets. */
const rotationOfRow = (row: unknown) => {
  if (row === null || typeof row !== 'object') return null;
  const { applied, confirmed, ...rest } = row as { applied: string[]; confirmed: string[] };
  return { ...rest, applied: new Set(applied), confirmed: new Set(confirmed) };
};

describe('the mesh projections', () => {
  let testLog: TestLog;
  let pool: pg.Pool;
  const schemaSets: ProjectorSchemas[] = [];
  const projectors: Projector<MeshEvent>[] = [];

  const startProjector = async (schemas: ProjectorSchemas, batch?: { maxCommits: number; maxEvents: number }): Promise<Projector<MeshEvent>> => {
    schemaSets.push(schemas);
    const projector = await startMeshTestProjector(testLog, {
      projections: meshProjections(),
      schemas,
      planIntervalMs: 1_000,
      ...(batch ? { settings: { batch } } : {}),
    });
    projectors.push(projector);
    return projector;
  };
  const caughtUp = async (schemas: ProjectorSchemas, seq: number): Promise<void> => {
    for (const projection of meshProjections()) await waitServingAt(pool, schemas, projection.name, seq, 120_000);
  };
  const rows = async (schemas: ProjectorSchemas, table: string): Promise<Record<string, unknown>[]> =>
    (await pool.query(`SELECT * FROM ${ident(schemas.read)}.${ident(table)} t ORDER BY t::text`)).rows;

  beforeAll(async () => {
    testLog = await openTestLog();
    pool = openPool();
  });
  afterAll(async () => {
    for (const projector of projectors) await projector.stop();
    for (const schemas of schemaSets) await dropSchemas(pool, schemas);
    await pool.end();
    await testLog.close();
  });

  it('handles every event type that changes the mesh in a projection besides the audit index', () => {
    const unhandled = meshEventRegistry()
      .types()
      .filter((type) => !STATELESS.has(type) && !meshProjections().some((p) => p.name !== 'audit' && handlerOf(p, type)));
    expect(unhandled).toEqual([]);
  });

  it('over a generated log of 50,000 events: a rebuild equals the tables built as it arrived, and both are the mesh evolveMesh folds', async () => {
    const incremental = freshSchemas();
    // Small batches while following, so its transactions cut the log elsewhere than the rebuild's.
    await startProjector(incremental, { maxCommits: 500, maxEvents: 1_111 });
    const t0 = Date.now();
    const lap = (what: string) => process.env.MESH_TEST_LAPS && process.stderr.write(`${what}: ${Date.now() - t0} ms\n`);
    const generated = await writeMeshLog(testLog.nc, { ...testLog.settings, key: testLog.key }, { minEvents: 50_000, withVoid: true });
    expect(generated.events).toBeGreaterThanOrEqual(50_000);
    expect([...generated.types].sort()).toEqual(meshEventRegistry().types());
    lap('generated');
    await caughtUp(incremental, generated.headSeq);
    lap('followed');

    const scratch = freshSchemas();
    await startProjector(scratch);
    await caughtUp(scratch, generated.headSeq);
    lap('rebuilt');

    for (const table of TABLES) {
      const built = await rows(incremental, table);
      expect({ table, rows: await rows(scratch, table) }).toEqual({ table, rows: built });
    }
    expect((await rows(scratch, 'audit')).length).toBe(generated.events);
    lap('compared');
    await expectMesh(scratch, generated);
    lap('checked against evolveMesh');
  }, 240_000);

  const expectMesh = async (schemas: ProjectorSchemas, { state }: GeneratedLog): Promise<void> => {
    const byKey = <T>(list: [string, T][]) => new Map(list.sort(([a], [b]) => a.localeCompare(b)));
    const sorted = <T>(map: Map<string, T>) => byKey([...map.entries()]);

    // A removed node's row stays, marked; the fold keeps only the nodes in the mesh.
    const nodeRows = await rows(schemas, 'nodes');
    // A node's public domain is in the routes projection's public_domains.
    const domains = new Map((await rows(schemas, 'public_domains')).map((r) => [r.node as string, r.domain as string]));
    const nodes = nodeRows
      .filter((r) => r.removed_seq === null)
      .map(
        (r) =>
          [
            r.name as string,
            { name: r.name, root: r.root, address: r.address, ...(r.public_key ? { publicKey: r.public_key } : {}), ...(r.cordoned ? { cordoned: true } : {}), ...(domains.has(r.name as string) ? { publicDomain: domains.get(r.name as string) } : {}) },
          ] as [string, unknown],
      );
    expect(byKey(nodes)).toEqual(sorted(state.nodes.byName));
    expect(nodeRows.filter((r) => r.removed_seq !== null).map((r) => r.name)).toEqual(['ghost']);

    const tokens = (await rows(schemas, 'enrolment_tokens')).map(
      (r) => [r.token_id as string, { tokenId: r.token_id, node: r.node, expiresAt: r.expires_at, ...(r.spent_by ? { spentBy: r.spent_by } : {}), ...(r.retired_with ? { retiredWith: r.retired_with } : {}) }] as [string, unknown],
    );
    expect(byKey(tokens)).toEqual(byKey([...state.nodes.tokens.entries()].map(([k, { verifier: _verifier, ...t }]) => [k, t])));

    const operators = (await rows(schemas, 'operators')).map((r) => [r.name as string, { operator: r.name, publicKey: r.public_key, revoked: r.revoked }] as [string, unknown]);
    expect(byKey(operators)).toEqual(sorted(state.operators.byName));

    const names = (await rows(schemas, 'public_names')).map(
      (r) => [r.public_name as string, { node: r.node, module: r.module, route: r.route, name: r.name, publicName: r.public_name, proxy: { node: r.proxy_node, module: r.proxy_module } }] as [string, unknown],
    );
    expect(byKey(names)).toEqual(sorted(state.routes.byPublicName));
    const secrets = (await rows(schemas, 'secrets')).map((r) => [r.name as string, { secret: r.name, purpose: r.purpose, version: r.version, recipients: r.recipients, seq: Number(r.changed_seq), highest: r.highest, rotation: rotationOfRow(r.rotation), origin: r.origin, handedOver: r.handed_over }] as [string, unknown]);
    expect(secrets.length).toBeGreaterThan(0);
    expect(byKey(secrets)).toEqual(sorted(state.secrets.byName));
    const [root, ...others] = await rows(schemas, 'trust_root');
    expect(others).toEqual([]);
    expect(state.trust.root).not.toBeNull();
    expect(root && { certificate: root.certificate, fingerprint: root.fingerprint, subject: root.subject, validTo: root.valid_to, seq: Number(root.set_seq) }).toEqual(state.trust.root);

    const modules = (await rows(schemas, 'modules')).map((r) => [r.name as string, { name: r.name, definitionVersion: r.definition_version, digest: r.digest, manifest: r.manifest }] as [string, unknown]);
    expect(byKey(modules)).toEqual(sorted(state.catalogue.modules));

    const aliases = await rows(schemas, 'seat_aliases');
    const aliasesOf = (id: unknown) => aliases.filter((a) => a.seat_id === id).sort((a, b) => Number(a.position) - Number(b.position)).map((a) => a.alias);
    const seats = (await rows(schemas, 'seats')).map(
      (r) =>
        [
          r.id as string,
          {
            id: r.id,
            name: r.name,
            aliases: aliasesOf(r.id),
            scope: r.scope,
            delivers: r.delivers,
            reserved: r.reserved,
            decided: r.decided,
            protocol: r.protocol,
            definer: r.definer === 'system' ? { kind: 'system' } : { kind: 'module', module: r.definer_module },
          },
        ] as [string, unknown],
    );
    expect(byKey(seats)).toEqual(sorted(state.seats.byId));

    const holdings = (await rows(schemas, 'holdings')).map((r) => [`${String(r.seat_id)}@${String(r.scope_key)}`, { node: r.node, module: r.module }] as [string, unknown]);
    expect(byKey(holdings)).toEqual(sorted(state.seats.holdings));

    const resolutions = await rows(schemas, 'assignment_resolutions');
    const assignments = (await rows(schemas, 'assignments')).map((r) => {
      const own = resolutions.filter((x) => x.node === r.node && x.module === r.module).sort((a, b) => Number(a.position) - Number(b.position));
      return [
        `${String(r.node)}/${String(r.module)}`,
        {
          module: r.module,
          node: r.node,
          definitionVersion: r.definition_version,
          resolutions: own.map((x) => ({ requirement: x.requirement, contract: x.contract, provider: x.provider, answer: x.answer })),
          pins: r.pins,
          values: r.values,
          placements: r.placements,
        },
      ] as [string, unknown];
    });
    expect(byKey(assignments)).toEqual(sorted(state.assignments.byKey));
    expect(resolutions.length).toBeGreaterThan(0);

    const builds = state.builds;
    const heads = (await rows(schemas, 'source_heads')).map((r) => [r.source_key as string, { commit: r.commit, seq: Number(r.moved_seq) }] as [string, unknown]);
    expect(byKey(heads)).toEqual(sorted(builds.heads));
    const buildRows = (await rows(schemas, 'builds')).map((r) => {
      const outcome =
        r.status === 'succeeded' ? { digest: r.artifact_digest, finishedSeq: Number(r.finished_seq) } : r.status === 'failed' ? { reason: r.failure, output: r.failure_output, finishedSeq: Number(r.finished_seq) } : {};
      const record = { buildId: r.build_id, module: r.module, definitionVersion: r.definition_version, commit: r.commit, source: r.source, path: r.path, recipe: r.recipe, output: r.output, bases: r.bases, registerOnly: r.register_only, reason: r.reason, submittedSeq: Number(r.submitted_seq), status: r.status, ...outcome };
      return [r.build_id as string, record] as [string, unknown];
    });
    // The table keeps every build; the fold the unfinished ones and each module's newest.
    const newestSubmitted = new Map<string, number>();
    for (const [, record] of buildRows as [string, { module: string; submittedSeq: number }][]) newestSubmitted.set(record.module, Math.max(newestSubmitted.get(record.module) ?? 0, record.submittedSeq));
    const foldedBuildRows = (buildRows as [string, { module: string; submittedSeq: number; status: string }][]).filter(([, record]) => record.status === 'submitted' || newestSubmitted.get(record.module) === record.submittedSeq);
    expect(buildRows.length).toBeGreaterThan(foldedBuildRows.length);
    expect(byKey(foldedBuildRows)).toEqual(sorted(builds.builds));
    const versions = (await rows(schemas, 'module_versions')).map(
      (r) => [`${String(r.module)}@${String(r.artifact_digest)}`, { module: r.module, digest: r.artifact_digest, commit: r.commit, bases: r.bases, buildId: r.build_id, seq: Number(r.built_seq) }] as unknown as [string, { module: unknown; seq: number }],
    );
    const latest = new Map<string, unknown>();
    for (const [, version] of [...versions].sort(([, a], [, b]) => a.seq - b.seq)) latest.set(version.module as string, version);
    expect(sorted(latest)).toEqual(sorted(builds.latest));
    // Every version ever is in the table; the fold keeps each module's latest and deployed.
    const deployedRows = new Set((await rows(schemas, 'module_rollouts')).flatMap((r) => (r.deployed_digest ? [`${String(r.module)}@${String(r.deployed_digest)}`] : [])));
    const latestKeys = new Set([...latest.values()].map((v) => `${String((v as { module: unknown }).module)}@${String((v as { digest: unknown }).digest)}`));
    expect(byKey(versions.filter(([key]) => latestKeys.has(key) || deployedRows.has(key)))).toEqual(sorted(builds.versions));
    const rollouts = await rows(schemas, 'module_rollouts');
    expect(byKey(rollouts.filter((r) => r.policy).map((r) => [r.module as string, r.policy]))).toEqual(sorted(builds.policies));
    expect(byKey(rollouts.filter((r) => r.deployed_digest).map((r) => [r.module as string, r.deployed_digest]))).toEqual(sorted(builds.deployed));
    const kept = (await rows(schemas, 'kept_versions')).map((r) => [r.module as string, { head: r.head, failedBuild: r.failed_build, reason: r.reason, seq: Number(r.kept_seq) }] as [string, unknown]);
    expect(byKey(kept)).toEqual(sorted(builds.kept));
    expect(kept.length).toBeGreaterThan(0);
    expect((await rows(schemas, 'graph_edges')).map((r) => ({ source: r.source, target: r.target, digest: r.target_digest }))).toEqual(
      [...builds.latest.values()].flatMap((v) => v.bases.map((b) => ({ source: v.module, target: b.name, digest: b.digest }))),
    );

    // The last refusal stated for each node, as the controller remembers it.
    const refusals = new Map<string, { reason: string; seq: number; derivedFromSeq: number }>();
    for (const fact of (await rows(schemas, 'facts')).sort((a, b) => Number(a.seq) - Number(b.seq))) {
      const data = fact.data as { reason: string; derivedFromSeq: number };
      if (fact.type === 'declaration.refused') refusals.set(fact.node as string, { reason: data.reason, seq: Number(fact.seq), derivedFromSeq: data.derivedFromSeq });
    }
    expect(sorted(refusals)).toEqual(sorted(state.declarations.refusals));
    // The declarations projection keeps the same, one row per node.
    const stated = (await rows(schemas, 'declaration_refusals')).map((r) => [r.node as string, { reason: r.reason, seq: Number(r.seq), derivedFromSeq: Number(r.derived_from_seq) }] as [string, unknown]);
    expect(byKey(stated)).toEqual(sorted(state.declarations.refusals));

    // What each node holds now, and since where each hold was first stated.
    const holds = (await rows(schemas, 'node_holds')).map(
      (r) => [`${String(r.node)}/${String(r.module)}/${String(r.resource)}`, { kind: r.kind, reason: r.reason, since: { seq: Number(r.since_seq), time: new Date(r.since_time as string).toISOString() } }] as [string, unknown],
    );
    const folded = [...allStatedHolds(state.facts)].map((h) => [`${h.node}/${h.module}/${h.resource}`, { kind: h.kind, reason: h.reason, since: { seq: h.since.seq, time: new Date(h.since.time).toISOString() } }] as [string, unknown]);
    expect(holds.length).toBeGreaterThan(0);
    expect(byKey(holds)).toEqual(byKey(folded));
  };
});
