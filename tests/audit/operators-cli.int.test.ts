import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { meshHome } from '../../src/config.js';
import { runMesh } from '../helpers/cli.js';
import { testNatsUrl } from '../helpers/log.js';
import { uniqueName } from '../helpers/names.js';
import { openTestMesh, type TestMesh } from '../helpers/test-mesh.js';
import type pg from 'pg';
import { dropSchemas, freshSchemas, openPool, testDatabaseUrl } from '../projections/harness.js';

// Operators from the command line: a new one makes a key, is added by an existing one, is told
// apart in the log, and once revoked is refused. `mesh operator list` answers from the operators
// projection, so the mesh's controller folds its log into schemas of this test's own.

describe('mesh operator', () => {
  let t: TestMesh;
  let env: Record<string, string>;
  let pool: pg.Pool;
  const schemas = freshSchemas();
  const dir = join(meshHome(), 'tmp', uniqueName('operators-cli-'));
  const graceKey = join(dir, 'grace.key');

  beforeAll(async () => {
    t = await openTestMesh();
    pool = openPool();
    await t.startController({ projector: { databaseUrl: testDatabaseUrl(), schemas } });
    env = { MESH_NATS_URL: testNatsUrl(), MESH_PROJECTOR_SCHEMA: schemas.control, MESH_READ_SCHEMA: schemas.read, ...(await t.operatorCommands()) };
  });
  afterAll(async () => {
    await t.close();
    await dropSchemas(pool, schemas);
    await pool.end();
    rmSync(dir, { recursive: true, force: true });
  });

  it('adds an operator by the public key they made, tells them apart, and refuses them once revoked', async () => {
    const made = await runMesh(['operator', 'key', 'grace', '--out', graceKey, '--json'], env);
    expect(made.code).toBe(0);
    const { publicKey } = JSON.parse(made.stdout) as { publicKey: string };
    expect((await runMesh(['operator', 'add', 'grace', '--key', publicKey], env)).code).toBe(0);

    const asGrace = { ...env, MESH_OPERATOR_KEY: graceKey };
    expect((await runMesh(['node', 'add', 'lab1'], asGrace)).code).toBe(0);
    const history = await t.log.readAggregate('node.lab1');
    expect(history.events[0]?.actor).toBe('operator:grace');

    const listed = JSON.parse((await runMesh(['operator', 'list', '--json'], env)).stdout) as { operator: string; revoked: boolean }[];
    expect(listed.map((o) => [o.operator, o.revoked])).toEqual([
      ['ada', false],
      ['grace', false],
    ]);
    expect((await runMesh(['operator', 'revoke', 'grace'], env)).code).toBe(0);
    const refused = await runMesh(['node', 'add', 'lab2'], asGrace);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain('this operator was revoked');
  });
});
