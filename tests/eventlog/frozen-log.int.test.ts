import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type pg from 'pg';
import { pino } from 'pino';
import { projectRoot } from '../../src/config.js';
import { JetStreamEventLog } from '../../src/adapters/eventlog/jetstream-log.js';
import { composeDeclaration } from '../../src/domain/declarations/compose.js';
import { emptyMeshState, evolveMesh, type MeshState } from '../../src/domain/mesh/state.js';
import { meshEventRegistry, type MeshEvent, type StoredMeshEvent } from '../../src/domain/registry.js';
import type { MeshError } from '../../src/errors.js';
import { meshProjections } from '../../src/projections/catalogue.js';
import { listBuilds, type ProjectorSchemas } from '../../src/projections/control.js';
import { Projector } from '../../src/projections/projector.js';
import type { StallReport } from '../../src/projections/runner.js';
import { ident } from '../../src/projections/sql.js';
import { collect, openTestLog, publishRaw, readFrozen, type FrozenCommit, type TestLog } from '../helpers/log.js';
import { dropSchemas, eventually, FAST, freshSchemas, openPool, testDatabaseUrl, waitServingAt } from '../projections/harness.js';
import { allNodes } from '../../src/domain/nodes/state.js';
import { allSeats } from '../../src/domain/seats/state.js';

// The frozen log of every event type at every version it has had (fixtures/event-logs/README.md),
// published raw into a fresh stream: read through today's upcasters, folded by evolveMesh, replayed
// into empty projections, and compared with the committed expected state. A change to an event's
// shape without an upcaster changes what this replays to, or stops it, and fails here.

const FIXTURES = join(projectRoot, 'fixtures', 'event-logs');
const FROZEN = 'mesh-every-type.jsonl';
const EXPECTED = join(FIXTURES, 'mesh-every-type.expected.json');
const TABLES = ['audit', 'nodes', 'enrolment_tokens', 'modules', 'module_definitions', 'source_heads', 'builds', 'module_versions', 'module_rollouts', 'kept_versions', 'graph_edges', 'seats', 'seat_aliases', 'holdings', 'assignments', 'assignment_resolutions', 'facts', 'operators', 'declaration_refusals', 'node_holds', 'public_domains', 'public_names', 'consumer_answers', 'secrets', 'trust_root'];

const frozen = (): FrozenCommit[] => readFrozen(FROZEN);

/**
 * What the fold says the mesh is, slice by slice, in the shape the committed expectation records
 * it: the slices' own content, without the indexes they keep to answer quickly (a seat by any
 * name, what an assignment holds, who provides a contract), which follow from it.
 */
const meaningOf = (state: MeshState): Record<string, unknown> => ({
  seq: state.seq,
  seats: state.seats.byId,
  modules: state.catalogue.modules,
  nodes: state.nodes.byName,
  assignments: state.assignments.byKey,
  holdings: state.seats.holdings,
  commands: state.commands.recent,
  versions: state.versions,
  declarationRefusals: state.declarations.refusals,
  trust: state.trust,
  enrolmentTokens: state.nodes.tokens,
  operators: state.operators.byName,
  commandWindow: state.operators.commandWindow,
  builds: state.builds,
  facts: { byNode: new Map([...state.facts.byNode].map(([node, facts]) => [node, { ...facts, refused: byResource(facts.refused), crashLooping: byResource(facts.crashLooping) }])) },
});

/** A module's standing facts as resource → fact, the shape the expectation records them in. */
const byResource = <V>(byModule: Map<string, { resource: string; fact: V }[]>): Map<string, Map<string, V>> =>
  new Map([...byModule].map(([module, entries]) => [module, new Map(entries.map((entry) => [entry.resource, entry.fact]))]));

/** Maps as objects sorted by key, sets as arrays: the folded mesh as plain, comparable JSON. */
const plain = (value: unknown): unknown => {
  if (value instanceof Map) return Object.fromEntries([...value.entries()].map(([k, v]) => [String(k), plain(v)] as const).sort(([a], [b]) => a.localeCompare(b)));
  if (value instanceof Set) return [...value].map(plain);
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.map(plain);
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  return value;
};

describe('the frozen log of every event type', () => {
  let pool: pg.Pool;
  const logs: TestLog[] = [];
  const projectors: Projector<MeshEvent>[] = [];
  const schemaSets: ProjectorSchemas[] = [];

  beforeAll(() => {
    pool = openPool();
  });
  afterAll(async () => {
    for (const projector of projectors) await projector.stop();
    for (const schemas of schemaSets) await dropSchemas(pool, schemas);
    await pool.end();
    for (const log of logs) {
      await log.jsm.streams.delete(log.settings.stream).catch(() => undefined);
      await log.close();
    }
  });

  /** A fresh LOG stream of the test's own, with the commits published raw, exactly as stored. */
  const openFrozen = async (commits: FrozenCommit[]): Promise<TestLog> => {
    const t = await openTestLog();
    logs.push(t);
    await publishRaw(t, commits);
    return t;
  };
  const meshLog = (t: TestLog): JetStreamEventLog<MeshEvent> => new JetStreamEventLog(t.nc, { ...t.settings, registry: meshEventRegistry() });
  const startProjector = async (t: TestLog, onStall?: (stall: StallReport) => void): Promise<ProjectorSchemas> => {
    const schemas = freshSchemas();
    schemaSets.push(schemas);
    const projector = new Projector({
      databaseUrl: testDatabaseUrl(),
      nc: t.nc,
      log: { stream: t.settings.stream, subjectPrefix: t.settings.subjectPrefix, registry: meshEventRegistry() },
      projections: meshProjections(),
      schemas,
      planIntervalMs: 1_000,
      logger: pino({ level: process.env.MESH_TEST_LOG ?? 'silent' }),
      settings: FAST,
      ...(onStall ? { onStall } : {}),
    });
    projectors.push(projector);
    await projector.start();
    return schemas;
  };

  it('holds an event of every type of the registry at every version it has had', () => {
    const stored = new Set(frozen().flatMap(({ commit }) => commit.events.map((e) => `${e.type}@${e.schemaVersion}`)));
    const registry = meshEventRegistry();
    const missing = registry.types().flatMap((type) =>
      Array.from({ length: registry.currentVersion(type) }, (_, i) => `${type}@${i + 1}`).filter((typeAtVersion) => !stored.has(typeAtVersion)),
    );
    // A type or version added to the registry needs a line here (fixtures/event-logs/README.md says how).
    expect({ missingFromFrozenLog: missing }).toEqual({ missingFromFrozenLog: [] });
  });

  it('replays into empty projections to the committed expected state, and every node still composes', async () => {
    const commits = frozen();
    const t = await openFrozen(commits);

    // The reference semantics: the log folded by evolveMesh.
    const events: StoredMeshEvent[] = await collect(meshLog(t).read());
    expect(events.length).toBe(commits.reduce((n, c) => n + c.commit.events.length, 0));
    const state: MeshState = emptyMeshState();
    for (const event of events) evolveMesh(state, event);

    // After the replay, every node's declaration composes, with no hand step: the seat renamed in
    // the log (mesh-broker → mesh-bus-host) resolves under its old name in manifests registered
    // before and after the rename.
    const declarations: Record<string, unknown> = {};
    for (const node of [...allNodes(state.nodes)].map((node) => node.name).sort()) {
      const composition = composeDeclaration(state, node);
      expect({ node, problems: composition.ok ? [] : composition.problems }).toEqual({ node, problems: [] });
      if (composition.ok) declarations[node] = { digest: composition.declaration.digest, assignments: composition.declaration.assignments.map((a) => ({ module: a.module, seats: a.seats })) };
    }
    const renamed = [...allSeats(state.seats)].find((seat) => seat.name === 'mesh-bus-host');
    expect(renamed?.aliases).toEqual(['mesh-broker']);
    expect(declarations.alpha).toMatchObject({ assignments: expect.arrayContaining([{ module: 'local-bus', seats: ['mesh-bus-host'] }]) });
    expect(Object.keys(declarations)).toEqual(['alpha', 'beta', 'gamma']);

    // The projections, replayed into fresh schemas.
    const schemas = await startProjector(t);
    const headSeq = commits.length;
    for (const projection of meshProjections()) await waitServingAt(pool, schemas, projection.name, headSeq, 20_000);
    const tables: Record<string, unknown[]> = {};
    for (const table of TABLES) {
      const { rows } = await pool.query(`SELECT * FROM ${ident(schemas.read)}.${ident(table)} t ORDER BY t::text`);
      tables[table] = plain(rows) as unknown[];
    }

    const actual = JSON.parse(JSON.stringify({ tables, mesh: plain(meaningOf(state)), declarations })) as Record<string, unknown>;
    if (process.env.MESH_UPDATE_GOLDEN === '1' || !existsSync(EXPECTED)) {
      if (process.env.MESH_UPDATE_GOLDEN !== '1') throw new Error(`${EXPECTED} is missing: run this test once with MESH_UPDATE_GOLDEN=1, review the file and commit it`);
      writeFileSync(EXPECTED, `${JSON.stringify(actual, null, 2)}\n`);
    }
    const expected = JSON.parse(readFileSync(EXPECTED, 'utf8')) as { tables: Record<string, unknown[]>; mesh: unknown; declarations: unknown };
    // One comparison per table, so a failure names the table and shows its diff.
    for (const table of TABLES) expect({ table, rows: tables[table] }).toEqual({ table, rows: expected.tables[table] });
    expect({ mesh: actual.mesh }).toEqual({ mesh: expected.mesh });
    expect({ declarations: actual.declarations }).toEqual({ declarations: expected.declarations });
  }, 30_000);

  it('stops at an event of an unknown version, naming its sequence and type, and never skips it', async () => {
    const commits = frozen();
    const at = commits.findIndex(({ commit }) => commit.events.some((e) => e.type === 'seat.renamed'));
    const line = commits[at] as FrozenCommit;
    // The frozen line as a newer control plane would have stored it.
    commits[at] = { ...line, commit: { ...line.commit, events: line.commit.events.map((e) => (e.type === 'seat.renamed' ? { ...e, schemaVersion: 99 } : e)) } };
    const seq = at + 1;
    const t = await openFrozen(commits);

    // The reader yields everything before it, then throws naming it; it never goes past.
    const read: StoredMeshEvent[] = [];
    const error = await (async () => {
      for await (const event of meshLog(t).read()) read.push(event);
    })().catch((e: MeshError) => e);
    expect(error).toMatchObject({ code: 'unknown_event', details: { type: 'seat.renamed', schemaVersion: 99, seq } });
    expect(read.at(-1)?.seq).toBe(seq - 1);
    await expect(collect(meshLog(t).read({ fromSeq: seq }))).rejects.toMatchObject({ code: 'unknown_event', details: { type: 'seat.renamed', seq } });

    const stalls: StallReport[] = [];
    const schemas = await startProjector(t, (stall) => stalls.push(stall));
    const projections = meshProjections().map((p) => p.name);
    await eventually(
      'every projection to stall at the unknown event',
      () => listBuilds(pool, schemas),
      (builds) => projections.every((name) => builds.some((b) => b.projection === name && b.stall?.seq === seq)),
      20_000,
    );
    for (const build of await listBuilds(pool, schemas)) {
      expect({ projection: build.projection, stall: { seq: build.stall?.seq, type: build.stall?.type }, checkpoint: build.checkpoint }).toEqual({
        projection: build.projection,
        stall: { seq, type: 'seat.renamed' },
        checkpoint: seq - 1,
      });
    }
    expect(stalls.map((s) => [s.projection, s.seq, s.type]).sort()).toEqual(projections.map((name) => [name, seq, 'seat.renamed']).sort());
    // Nothing after it was applied: the audit index ends just before it.
    const audit = await eventually('the audit build', () => listBuilds(pool, schemas, 'audit'), (builds) => builds.length > 0);
    const { rows } = await pool.query<{ max: string }>(`SELECT max(seq)::text AS max FROM ${ident(audit[0]?.schemaName as string)}.audit`);
    expect(Number(rows[0]?.max)).toBe(seq - 1);
  }, 30_000);
});
