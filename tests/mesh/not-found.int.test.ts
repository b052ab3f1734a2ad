import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { join } from 'node:path';
import type pg from 'pg';
import { loadOperatorKey } from '../../src/adapters/operator-keys.js';
import { meshHome } from '../../src/config.js';
import { meshProgram } from '../../src/cli/program.js';
import { operatorRecipient, sealGenesisSecrets } from '../../src/controller/genesis-secrets.js';
import { verbsOf } from '../../src/cli/verbs.js';
import { runMesh } from '../helpers/cli.js';
import { fixtureManifest } from '../helpers/given.js';
import { testNatsUrl } from '../helpers/log.js';
import { uniqueName } from '../helpers/names.js';
import { openTestMesh, type TestMesh } from '../helpers/test-mesh.js';
import { dropSchemas, freshSchemas, openPool, testDatabaseUrl } from '../projections/harness.js';

// Exit 5 means one thing: something the verb names does not exist. Every verb of the CLI's own
// definition either has its not-found case here — exit 5, and a message naming what was not
// found — or is listed as naming nothing that must already exist.

/** This mesh's genesis secrets, holding one secret sealed to its operator: `secret unseal` is asked for another. */
const genesisFile = join(meshHome(), 'tmp', `${uniqueName('genesis-')}.json`);

/** Verbs that name nothing that must exist (they list, make, or run). */
const NAME_NOTHING_THAT_MUST_EXIST = new Set([
  'dev', 'dev up', 'dev down', 'dev status', 'log', 'log void', 'operator', 'operator key', 'operator add', 'operator list', 'operator window', 'audit', 'audit verify',
  'module', 'module register', 'module list', 'events', 'events dangling', 'seats', 'seat', 'status', 'node', 'node add', 'node list', 'node token',
  'builder', 'controller', 'agent', 'projections', 'projections status', 'completion', 'vault', 'secret', 'secret status',
  'postgres', 'postgres init', 'postgres server', 'postgres logins', 'postgres sign', 'proxy', 'proxy serve', 'console', 'console open',
  // names a certificate file, not something of the mesh: a missing file is bad input (2)
  'trust', 'trust root',
]);

/** Each verb's not-found case: the arguments, and what the message must name. */
const NOT_FOUND: Record<string, { args: string[]; names: RegExp }> = {
  history: { args: ['history', 'nosuch'], names: /nothing is known of nosuch/ },
  'node show': { args: ['node', 'show', 'nosuch'], names: /no node nosuch/ },
  'module show': { args: ['module', 'show', 'nosuch'], names: /no module nosuch/ },
  'module moved': { args: ['module', 'moved', 'nosuch', 'abc123'], names: /nosuch: no such module is registered/ },
  'module rollout': { args: ['module', 'rollout', 'nosuch', 'record'], names: /nosuch: no such module is registered/ },
  'module deploy': { args: ['module', 'deploy', 'nosuch', 'abcd1234'], names: /nosuch: no such module is registered/ },
  'module keep': { args: ['module', 'keep', 'nosuch', '--reason', 'x'], names: /nosuch: no such module is registered/ },
  'seat handover': { args: ['seat', 'handover', 'nosuch', '--to', 'lab1/distribution', '--from', 'none'], names: /nosuch: no such seat/ },
  'seat rename': { args: ['seat', 'rename', 'nosuch', 'nosuch-2'], names: /nosuch: no such seat/ },
  'operator revoke': { args: ['operator', 'revoke', 'nosuch'], names: /nosuch: no such operator/ },
  'node cordon': { args: ['node', 'cordon', 'nosuch'], names: /nosuch: no such node/ },
  'node uncordon': { args: ['node', 'uncordon', 'nosuch'], names: /nosuch: no such node/ },
  'node remove': { args: ['node', 'remove', 'nosuch'], names: /nosuch: no such node/ },
  'node domain': { args: ['node', 'domain', 'nosuch', 'example.org'], names: /nosuch: no such node/ },
  assign: { args: ['assign', 'nosuch', 'lab1'], names: /nosuch: no such module is registered/ },
  unassign: { args: ['unassign', 'distribution', 'nosuch'], names: /nosuch\/distribution: distribution is not assigned to nosuch/ },
  build: { args: ['build', 'nosuch'], names: /nosuch/ },
  graph: { args: ['graph', 'nosuch'], names: /no module nosuch is registered/ },
  'projections rebuild': { args: ['projections', 'rebuild', 'nosuch'], names: /no projection named "nosuch"/ },
  'secret rotate': { args: ['secret', 'rotate', 'nosuch'], names: /nosuch: no such secret: the log names no secret by that name/ },
  'secret unseal': { args: ['secret', 'unseal', 'mesh/nosuch', '--file', genesisFile], names: /mesh\/nosuch: .* holds no such secret \(it holds mesh\/postgres-reader\)/ },
};

describe('exit 5 for whatever a verb names that does not exist', () => {
  let t: TestMesh;
  let env: Record<string, string>;
  let pool: pg.Pool;
  const schemas = freshSchemas();

  beforeAll(async () => {
    t = await openTestMesh();
    pool = openPool();
    await t.startController({ projector: { databaseUrl: testDatabaseUrl(), schemas } });
    env = { MESH_NATS_URL: testNatsUrl(), MESH_PROJECTOR_SCHEMA: schemas.control, MESH_READ_SCHEMA: schemas.read, ...(await t.operatorCommands()) };
    await t.run({ type: 'register-module', manifest: fixtureManifest('distribution') });
    await t.run({ type: 'add-node', node: 'lab1' });
    const ada = loadOperatorKey(env.MESH_OPERATOR_KEY!);
    sealGenesisSecrets(genesisFile, t.names.prefix, [{ secret: 'mesh/postgres-reader', purpose: 'the readers', value: uniqueName('pw') }], [{ name: operatorRecipient('ada'), key: ada.publicKey }]);
  });
  afterAll(async () => {
    await t.close();
    await dropSchemas(pool, schemas);
    await pool.end();
  });

  it('has a not-found case for every verb of the definition that names something', () => {
    const verbs = verbsOf(meshProgram()).map((path) => path.join(' '));
    expect(verbs.filter((verb) => !NAME_NOTHING_THAT_MUST_EXIST.has(verb) && !(verb in NOT_FOUND))).toEqual([]);
    expect(Object.keys(NOT_FOUND).filter((verb) => !verbs.includes(verb))).toEqual([]);
  });

  it.each(Object.entries(NOT_FOUND))('mesh %s: exit 5, naming it, in words and in --json', async (_verb, { args, names }) => {
    const result = await runMesh(args, env);
    expect({ code: result.code, stderr: result.stderr }).toMatchObject({ code: 5, stderr: expect.stringMatching(names) });
    expect(result.stderr).not.toMatch(/internal error|\n\s+at /);
    const json = await runMesh([...args, '--json'], env);
    expect(json.code).toBe(5);
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: false, error: { code: 'not_found' } });
  });

  it('mesh history: a full aggregate name that nothing happened to is not found either', async () => {
    const result = await runMesh(['history', 'node.nosuch'], env);
    expect(result.code).toBe(5);
    expect(result.stderr).toContain('nothing is known of node.nosuch');
  });

  it('mesh node remove --drain: a missing node is not found either', async () => {
    const result = await runMesh(['node', 'remove', 'nosuch', '--drain'], env);
    expect({ code: result.code, stderr: result.stderr }).toMatchObject({ code: 5, stderr: expect.stringContaining('nosuch: no such node') });
  });

  it('mesh assign: a missing node and a missing seat are named too', async () => {
    const node = await runMesh(['assign', 'distribution', 'nosuch'], env);
    expect(node.code).toBe(5);
    expect(node.stderr).toContain('nosuch: no such node');
    const seat = await runMesh(['assign', 'distribution', 'lab1', '--hold', 'nosuch'], env);
    expect(seat.code).toBe(5);
    expect(seat.stderr).toContain('--hold nosuch: no such seat');
  });
});
