import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type pg from 'pg';
import { meshProjections } from '../../src/projections/catalogue.js';
import { MeshInitialised } from '../../src/domain/mesh/events.js';
import { meshEventRegistry } from '../../src/domain/registry.js';
import { runMesh } from '../helpers/cli.js';
import { meta, openTestLog, type TestLog } from '../helpers/log.js';
import { Projector } from '../../src/projections/projector.js';
import { dropSchemas, FAST, freshSchemas, openPool, testDatabaseUrl, waitServingAt } from './harness.js';

const lines = (stdout: string): Record<string, unknown>[] =>
  stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);

describe('mesh projections', () => {
  let testLog: TestLog;
  let pool: pg.Pool;
  const schemas = freshSchemas();
  let env: Record<string, string>;
  beforeAll(async () => {
    testLog = await openTestLog({ log: { registry: meshEventRegistry() } });
    pool = openPool();
    env = {
      MESH_LOG_STREAM: testLog.settings.stream,
      MESH_LOG_SUBJECT_PREFIX: testLog.settings.subjectPrefix,
      MESH_PROJECTOR_SCHEMA: schemas.control,
      MESH_READ_SCHEMA: schemas.read,
    };
  });
  afterAll(async () => {
    await dropSchemas(pool, schemas);
    await testLog.close();
    await pool.end();
  });

  const initialise = async (from: number, count: number): Promise<void> => {
    for (let i = from; i < from + count; i++) {
      await testLog.log.append(`mesh.m${i}`, [{ type: MeshInitialised.type, data: { mesh: `m${i}`, logStream: testLog.settings.stream, controllerKey: testLog.key.publicKey } }], 0, meta(`genesis-${i}`));
    }
  };

  it('status says what is not built, rebuild builds it, and status then shows it caught up', async () => {
    await initialise(0, 5);
    const before = await runMesh(['projections', 'status', '--json'], env);
    expect(before.code).toBe(1);
    const names = meshProjections()
      .map((p) => p.name)
      .sort();
    expect(lines(before.stdout)).toEqual(names.map((projection) => expect.objectContaining({ projection, status: 'not built', headSeq: 5, lagCommits: 5 })));

    const first = await runMesh(['projections', 'rebuild', 'audit', '--json'], env);
    expect(first.code).toBe(0);
    // Off a terminal, progress is pino's structured log on stderr.
    expect(lines(first.stderr)).toContainEqual(expect.objectContaining({ projection: 'audit', version: 1, seq: 5, targetSeq: 5, events: 5, done: true, msg: 'projection caught up' }));
    expect(lines(first.stdout)).toEqual([expect.objectContaining({ rebuilt: 'audit', version: 1, generation: 1, checkpoint: 5, events: 5 })]);

    await initialise(5, 3);
    const second = await runMesh(['projections', 'rebuild', 'audit'], env);
    expect(second.code).toBe(0);
    expect(second.stdout).toMatch(/audit v1 \(generation 2\) now serves: 8 events, checkpoint seq 8/);
    const { rows } = await pool.query(`SELECT seq::int, type, aggregate, actor, command_id FROM "${schemas.read}".audit ORDER BY seq`);
    expect(rows).toHaveLength(8);
    expect(rows[7]).toEqual({ seq: 8, type: 'mesh.initialised', aggregate: 'mesh.m7', actor: 'test', command_id: 'genesis-7' });

    // A name it does not know among several: refused whole, nothing built.
    const typo = await runMesh(['projections', 'rebuild', 'nodes', 'nodez', 'seats'], env);
    expect({ code: typo.code, stderr: typo.stderr }).toEqual({ code: 5, stderr: expect.stringContaining('no projection named "nodez"') });
    expect(lines((await runMesh(['projections', 'status', '--json'], env)).stdout)).toContainEqual(expect.objectContaining({ projection: 'nodes', status: 'not built' }));

    // Every projection built, in one command, one after another: status has nothing to complain about.
    const rest = await runMesh(['projections', 'rebuild', ...names.filter((n) => n !== 'audit'), '--json'], env);
    expect(rest.code).toBe(0);
    expect(lines(rest.stdout).map((line) => line.rebuilt)).toEqual(names.filter((n) => n !== 'audit'));
    const after = await runMesh(['projections', 'status'], env);
    expect(after.code).toBe(0);
    expect(after.stdout).toMatch(/audit\s+serving\s+v1\s+8\s+8\s+0\s+0\.0\s+-/);
  });

  it('a rebuild by another process beside a running projector: the projector folds the new build from then on', async () => {
    // The controller's projector plans every 5 s; the CLI builds, switches and drops the old build
    // in between. Whichever way they meet, the new build must follow the log afterwards.
    const own = freshSchemas();
    const ownEnv = { ...env, MESH_PROJECTOR_SCHEMA: own.control, MESH_READ_SCHEMA: own.read };
    const projector = new Projector({
      databaseUrl: testDatabaseUrl(),
      nc: testLog.nc,
      log: { stream: testLog.settings.stream, subjectPrefix: testLog.settings.subjectPrefix, registry: meshEventRegistry() },
      projections: meshProjections(),
      schemas: own,
      planIntervalMs: 1_500,
      settings: FAST,
    });
    await projector.start();
    try {
      let next = 100;
      for (let round = 0; round < 4; round++) {
        await initialise(next, 2);
        next += 2;
        await waitServingAt(pool, own, 'assignments', await testLog.log.headSeq(), 20_000);
        expect((await runMesh(['projections', 'rebuild', 'assignments'], ownEnv)).code).toBe(0);
        await initialise(next, 2);
        next += 2;
        await waitServingAt(pool, own, 'assignments', await testLog.log.headSeq(), 20_000);
      }
    } finally {
      await projector.stop();
      await dropSchemas(pool, own);
    }
  });

  it('refuses a projection it does not know, naming the ones it does', async () => {
    const result = await runMesh(['projections', 'rebuild', 'nodez'], env);
    expect(result.code).toBe(5);
    expect(result.stderr).toContain(`no projection named "nodez"; the projections are: ${meshProjections()
      .map((p) => p.name)
      .join(', ')}`);
  });
});
