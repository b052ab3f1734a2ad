import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Declaration } from '../../src/domain/declarations/declaration.js';
import { fixtureManifest } from '../helpers/given.js';
import { openTestMesh, waitFor, type TestMesh } from '../helpers/test-mesh.js';

// A provider's per-consumer secret: requiring a database expands to a secret named for the
// consumer, which the controller declares to the consumer's node (which presents it) and to the
// provider's node (which applies it: creates the login) — on assignment after the provider was
// already declared, and gone from both when the consumer is unassigned.

describe('a per-consumer secret', () => {
  let t: TestMesh;
  const assign = (module: string, node: string, hold: string[]) => t.run({ type: 'assign', module, node, hold, pins: {}, values: {}, placements: {} });
  const secretsOf = (declaration: Declaration | undefined) =>
    (declaration?.assignments ?? []).flatMap((a) => a.resources.flatMap((r) => (r.kind === 'secret' ? [{ key: r.key, secret: r.secret, path: r.path, owner: r.owner }] : [])));

  beforeAll(async () => {
    t = await openTestMesh();
    for (const name of ['local-bus', 'vault', 'postgres', 'gitea']) await t.run({ type: 'register-module', manifest: fixtureManifest(name) });
    for (const node of ['alpha', 'beta']) await t.run({ type: 'add-node', node });
    await assign('local-bus', 'alpha', ['mesh-broker']);
    await assign('vault', 'alpha', ['mesh-vault']);
    await assign('postgres', 'alpha', ['mesh-store']);
    await t.startController();
  });
  afterAll(async () => t.close());

  it('is declared to the provider’s node and the consumer’s, and undeclared from both with the consumer', async () => {
    await waitFor('alpha declared postgres', async () => secretsOf(await t.declarationOf('alpha')).some((s) => s.key === 'postgres/secret-superuser'));
    await assign('gitea', 'beta', ['mesh-git']);
    const atProvider = await waitFor('alpha declared the login to apply', async () => secretsOf(await t.declarationOf('alpha')).find((s) => s.key === 'postgres/consumer-beta-gitea'));
    expect(atProvider).toEqual({ key: 'postgres/consumer-beta-gitea', secret: 'postgres-database/beta-gitea', path: '/var/lib/mesh/.mesh/postgres/consumers/beta-gitea', owner: '999:999' });
    const atConsumer = await waitFor('beta declared the login to present', async () => secretsOf(await t.declarationOf('beta')).find((s) => s.secret === 'postgres-database/beta-gitea'));
    expect(atConsumer).toEqual({ key: 'gitea/secret-db-secret', secret: 'postgres-database/beta-gitea', path: '/var/lib/mesh/.mesh/gitea/secrets/db-secret', owner: expect.anything() });
    // the declarations name it; its value is nowhere in them
    expect(JSON.stringify(await t.declarationOf('alpha'))).not.toMatch(/"value"/);

    await t.run({ type: 'unassign', module: 'gitea', node: 'beta' });
    await waitFor('alpha no longer declared the login', async () => !secretsOf(await t.declarationOf('alpha')).some((s) => s.key === 'postgres/consumer-beta-gitea'));
    expect(secretsOf(await t.declarationOf('alpha')).map((s) => s.key)).toEqual(['postgres/secret-superuser']);
  });
});
