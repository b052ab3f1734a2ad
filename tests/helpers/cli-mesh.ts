import { afterAll, beforeAll, expect } from '@jest/globals';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { meshHome } from '../../src/config.js';
import { dropSchemas, freshSchemas, openPool } from '../projections/harness.js';
import { operatorCli } from './cli.js';
import { uniqueName } from './names.js';
import { openTestMesh, type TestMesh } from './test-mesh.js';

/**
 * A suite's mesh driven through the CLI: a test mesh with its control plane (projections in fresh
 * schemas), opened before the suite and closed after it; `setUp` runs the suite's own steps
 * through the CLI, each of which must answer 0. `head` is the log's last sequence.
 */
export const cliMeshSuite = (label: string, setUp: (cli: ReturnType<typeof operatorCli>) => string[][]) => {
  const mesh: { t?: TestMesh; env: Record<string, string> } = { env: {} };
  const schemas = freshSchemas();
  const pool = openPool();
  const dir = join(meshHome(), 'tmp', uniqueName(`${label}-`));
  const t = (): TestMesh => {
    if (!mesh.t) throw new Error('the test mesh is not open yet');
    return mesh.t;
  };
  const head = async (): Promise<number> => (await t().jsm.streams.info(t().names.logStream)).state.last_seq;
  const cli = operatorCli(() => ({ env: mesh.env, logHead: head }), dir);

  beforeAll(async () => {
    mkdirSync(dir, { recursive: true });
    mesh.t = await openTestMesh();
    mesh.env = await mesh.t.startControlPlane(schemas);
    // Every change through the CLI, so the log's actors and command ids are what an operator's are.
    for (const step of setUp(cli)) expect({ step, ...(await cli.mesh(...step)) }).toMatchObject({ step, code: 0 });
  }, 120_000);

  afterAll(async () => {
    await mesh.t?.close();
    await dropSchemas(pool, schemas);
    await pool.end();
    rmSync(dir, { recursive: true, force: true });
  });

  return { ...cli, t, head, env: () => mesh.env };
};
