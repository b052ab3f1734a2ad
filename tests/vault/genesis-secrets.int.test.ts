import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { passwordFileName } from '../../src/adapters/database-logins.js';
import { moduleBusIdentity, newIdentity } from '../../src/adapters/identity.js';
import { loadOperatorKey } from '../../src/adapters/operator-keys.js';
import { keepSecret } from '../../src/adapters/vault-client.js';
import { meshHome } from '../../src/config.js';
import { CONTROLLER_RECIPIENT, openGenesisSecret, operatorRecipient, postgresFoundationSecrets, recordGenesisSecrets, sealGenesisSecrets } from '../../src/controller/genesis-secrets.js';
import { MeshService } from '../../src/controller/mesh-service.js';
import { MeshView } from '../../src/controller/mesh-view.js';
import { SecretKeeper } from '../../src/controller/secret-keeper.js';
import type { StoredMeshEvent } from '../../src/domain/registry.js';
import { VaultStore } from '../../src/vault/store.js';
import { runMesh } from '../helpers/cli.js';
import { testDatabaseUrl } from '../helpers/database.js';
import { uniqueName } from '../helpers/names.js';
import { listenToTheWire, plantedFound, projectionRows, storedMessages } from '../helpers/secret-places.js';
import { openTestMesh, waitFor, type TestMesh } from '../helpers/test-mesh.js';
import { fetchAs, openTestVault, testNode } from '../helpers/vault.js';
import { dropSchemas, freshSchemas } from '../projections/harness.js';

// The mesh's own first secrets: genesis seals the PostgreSQL roles' passwords to the controller's
// key and the operator's in a file, and the log names each, never its value; the controller hands
// each to the holder of mesh-vault, sealed to that holder's key alone, once one is assigned and
// answers; the vault keeps them encrypted across a restart, and hands them to no node.

const OWNERS = ['admin', 'projector', 'controller', 'reader'] as const;

describe('the mesh’s own first secrets', () => {
  let t: TestMesh;
  let pool: pg.Pool;
  let wire: ReturnType<typeof listenToTheWire>;
  let env: Record<string, string>;
  let view: MeshView;
  let keeper: SecretKeeper;
  const vaults: ReturnType<typeof openTestVault>[] = [];
  const schemas = freshSchemas();
  const dir = join(meshHome(), 'tmp', uniqueName('genesis-'));
  const genesisFile = join(dir, 'genesis-secrets.json');
  const planted = Object.fromEntries(OWNERS.map((owner) => [`mesh/postgres-${owner}`, `planted-${owner}-${randomBytes(18).toString('base64url')}`]));
  const names = Object.keys(planted).sort();

  const secretEvents = async (type: string): Promise<StoredMeshEvent[]> => {
    const events: StoredMeshEvent[] = [];
    for await (const event of t.log.read()) if (event.type === type) events.push(event);
    return events;
  };
  const genesis = async () => {
    const sealed = sealGenesisSecrets(genesisFile, t.names.prefix, postgresFoundationSecrets(join(dir, 'secrets')), [
      { name: CONTROLLER_RECIPIENT, key: t.controllerKey.publicKey },
      { name: operatorRecipient('ada'), key: loadOperatorKey(env.MESH_OPERATOR_KEY!).publicKey },
    ]);
    return { ...sealed, appended: await recordGenesisSecrets(new MeshService(t.newLog()), sealed.recorded, 'genesis') };
  };

  beforeAll(async () => {
    // The passwords as the stack writes them, one file per role.
    mkdirSync(join(dir, 'secrets'), { recursive: true });
    for (const owner of OWNERS) writeFileSync(join(dir, 'secrets', passwordFileName(owner)), `${planted[`mesh/postgres-${owner}`]}\n`, { mode: 0o600 });
    t = await openTestMesh();
    pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 2 });
    wire = listenToTheWire(t);
    env = await t.startControlPlane(schemas);
    await t.run({ type: 'register-module', manifest: { name: 'test-vault', provides: [{ provision: 'secret' }], canHold: ['mesh-vault'], resources: {} } });
    await t.run({ type: 'add-node', node: 'alpha', address: '127.0.0.1' });
    view = new MeshView(t.newLog(), { logger: pino({ level: 'silent' }) });
    view.start();
    keeper = new SecretKeeper(t.nc, view, new MeshService(t.newLog(), {}, view), { prefix: t.names.prefix, controller: t.controllerKey, genesisSecretsFile: genesisFile, actor: 'controller', logger: pino({ level: 'silent' }), retryMs: { first: 100, most: 300 } });
    keeper.start();
  });
  afterAll(async () => {
    wire?.subscription.unsubscribe();
    await keeper?.stop();
    await view?.stop();
    for (const vault of vaults) vault.remove();
    await t?.close();
    await dropSchemas(pool, schemas);
    await pool?.end();
    rmSync(dir, { recursive: true, force: true });
  });

  it('seals each to the controller’s key and the operator’s in a 0600 file, and the log names each as the mesh’s own', async () => {
    const first = await genesis();
    expect(first.sealed.sort()).toEqual(names);
    expect(first.appended.sort()).toEqual(names);
    expect(statSync(genesisFile).mode & 0o777).toBe(0o600);
    const file = readFileSync(genesisFile, 'utf8');
    expect(plantedFound({ 'the genesis file': [file] }, planted)).toEqual([]);
    // the operator's copy opens with the operator's key, and with no other
    const operator = loadOperatorKey(env.MESH_OPERATOR_KEY!);
    for (const name of names) expect(openGenesisSecret(genesisFile, name, 'operator:ada', operator)).toEqual({ version: 1, value: planted[name] });
    expect(openGenesisSecret(genesisFile, 'mesh/postgres-reader', CONTROLLER_RECIPIENT, t.controllerKey).value).toBe(planted['mesh/postgres-reader']);
    expect(() => openGenesisSecret(genesisFile, 'mesh/postgres-reader', 'operator:ada', newIdentity())).toThrow(/the copy sealed to operator:ada is sealed to key .*, and this key does not open it/);
    expect(() => openGenesisSecret(genesisFile, 'mesh/postgres-reader', 'operator:eve', operator)).toThrow(/it is sealed to controller and operator:ada, not to operator:eve/);

    // as an operator does it: mesh secret unseal, with the key MESH_OPERATOR_KEY names
    const unsealed = await runMesh(['secret', 'unseal', 'mesh/postgres-admin', '--file', genesisFile], env);
    expect({ code: unsealed.code, stdout: unsealed.stdout }).toEqual({ code: 0, stdout: `${planted['mesh/postgres-admin']}\n` });
    const unknown = await runMesh(['secret', 'unseal', 'mesh/postgres-nobody', '--file', genesisFile], env);
    expect(unknown.code).toBe(5);
    expect(unknown.stderr).toContain('holds no such secret');

    const founded = await secretEvents('secret.founded');
    expect(founded.map((e) => e.actor)).toEqual(names.map(() => 'genesis'));
    expect(founded.find((e) => (e.data as { secret: string }).secret === 'mesh/postgres-projector')?.data).toEqual({
      secret: 'mesh/postgres-projector',
      purpose: 'the PostgreSQL login mesh_projector, of the projector: it owns the projections',
      version: 1,
      sealedTo: [
        { name: 'controller', key: t.controllerKey.publicKey },
        { name: 'operator:ada', key: operator.publicKey },
      ],
    });
    // a second genesis (the next `mesh dev up`) seals nothing again and appends nothing
    const again = await genesis();
    expect(again.sealed).toEqual([]);
    expect(again.appended).toEqual([]);
    expect(readFileSync(genesisFile, 'utf8')).toBe(file);
  });

  it('hands nothing to a module that is not the holder of mesh-vault, and records nothing', async () => {
    // The vault is assigned to alpha, but what answers is another module's identity.
    await t.run({ type: 'assign', module: 'test-vault', node: 'alpha', hold: ['mesh-vault'], pins: {}, values: {}, placements: {} });
    const impostor = openTestVault(t.nc, { prefix: t.names.prefix, controllerKey: t.controllerKey.publicKey, identity: moduleBusIdentity(t.controllerKey, 'alpha', 'other') });
    vaults.push(impostor);
    await new Promise((r) => setTimeout(r, 1_500));
    impostor.stop();
    expect(await secretEvents('secret.handed-over')).toEqual([]);
    expect(new VaultStore({ dataDir: impostor.dataDir }).size()).toBe(0);
    // and mesh secret status says the vault has none of them yet
    const shown = await waitFor('the projection has the mesh’s own', async () => {
      const table = await runMesh(['secret', 'status', '-o', 'wide'], env);
      return table.stdout.includes('mesh/postgres-reader') ? table.stdout : undefined;
    });
    expect(shown).toMatch(/mesh\/postgres-admin +1 +none +controller, operator:ada +not yet +the PostgreSQL login mesh, of the cluster's bootstrap superuser: it sets up the roles\n/);
  });

  it('hands each to the holder of mesh-vault, which keeps it encrypted across a restart and hands it to no node', async () => {
    const vaultIdentity = moduleBusIdentity(t.controllerKey, 'alpha', 'test-vault');
    const vault = openTestVault(t.nc, { prefix: t.names.prefix, controllerKey: t.controllerKey.publicKey, identity: vaultIdentity });
    vaults.push(vault);
    const handed = await waitFor('all four handed over', async () => {
      const events = await secretEvents('secret.handed-over');
      return events.length === names.length ? events : undefined;
    });
    expect(handed.map((e) => e.actor)).toEqual(names.map(() => 'controller'));
    expect(handed.map((e) => e.data as { secret: string }).sort((a, b) => a.secret.localeCompare(b.secret))).toEqual(names.map((secret) => ({ secret, version: 1, vault: { node: 'alpha', module: 'test-vault' } })));

    // at rest: encrypted, and the same after a restart
    vault.stop();
    expect(plantedFound({ "the vault's data": [readFileSync(join(vault.dataDir, 'secrets.json'), 'utf8')] }, planted)).toEqual([]);
    const reopened = openTestVault(t.nc, { prefix: t.names.prefix, controllerKey: t.controllerKey.publicKey, identity: vaultIdentity, dataDir: vault.dataDir });
    vaults.push(reopened);
    const store = new VaultStore({ dataDir: vault.dataDir });
    for (const name of names) expect(store.value(store.get(name)!)?.value).toBe(planted[name]);

    // handed again: kept once; another value for the same version is never taken
    const keep = (secret: string, value: string, controller = t.controllerKey) =>
      keepSecret(t.nc, { prefix: t.names.prefix, controller, secret, purpose: 'p', version: 1, value, vaultKey: vaultIdentity.publicKey, timeoutMs: 3_000 });
    expect(await keep('mesh/postgres-reader', planted['mesh/postgres-reader']!)).toEqual({ kept: false });
    await expect(keep('mesh/postgres-reader', 'another value')).rejects.toMatchObject({ problems: [expect.objectContaining({ why: 'the vault holds version 1 of mesh/postgres-reader with another value, and never replaces one it holds' })] });
    // nobody but the controller hands it anything, and only the mesh's own
    await expect(keep('mesh/postgres-planted', 'a value', newIdentity())).rejects.toMatchObject({ problems: [expect.objectContaining({ what: 'signature', why: 'the keep request is not signed by the controller' })] });
    await expect(keep('beta-app/token', 'a value')).rejects.toMatchObject({ problems: [expect.objectContaining({ why: expect.stringContaining("the vault keeps only the mesh's own secrets") })] });
    // a host asking for one is refused: the mesh's own go to no node
    await expect(fetchAs(t.nc, t.names.prefix, testNode('alpha'), 'mesh/postgres-reader')).rejects.toMatchObject({ problems: [expect.objectContaining({ why: 'node alpha is not a recipient of mesh/postgres-reader (it goes to nobody)' })] });
  });

  it('mesh secret status shows them as the mesh’s own, held by the vault; a rotation of one is refused', async () => {
    const status = await waitFor('the projection has them handed over', async () => {
      const shown = await runMesh(['secret', 'status', '--json'], env);
      const read = JSON.parse(shown.stdout) as { secret: string; inVault: boolean }[];
      return read.length === names.length && read.every((s) => s.inVault) ? read : undefined;
    });
    expect(status.find((s) => s.secret === 'mesh/postgres-reader')).toEqual({
      secret: 'mesh/postgres-reader',
      purpose: 'the PostgreSQL login mesh_reader, of the readers: mesh status and every read verb',
      version: 1,
      recipients: ['controller', 'operator:ada'],
      seq: expect.any(Number),
      rotation: null,
      origin: 'genesis',
      inVault: true,
      handedOver: { node: 'alpha', module: 'test-vault' },
    });
    const table = await runMesh(['secret', 'status', '-o', 'wide'], env);
    expect(table.stdout.split('\n')[0]).toMatch(/^SECRET +VERSION +ROTATION +RECIPIENTS +VAULT +PURPOSE$/);
    expect(table.stdout).toMatch(/mesh\/postgres-reader +1 +none +controller, operator:ada +kept +the PostgreSQL login mesh_reader, of the readers: mesh status and every read verb\n/);
    const rotate = await runMesh(['secret', 'rotate', 'mesh/postgres-reader'], env);
    expect(rotate.code).toBe(3);
    expect(rotate.stderr).toMatch(/mesh\/postgres-reader is the mesh's own \(made at genesis, sealed to controller and operator:ada\)/);
  });

  it('finds the values nowhere in the log, on the wire or in a projection', async () => {
    const log = await storedMessages(t, t.names.logStream);
    const projections = await projectionRows(pool, schemas);
    // each place was looked into, and names the secrets it may name
    expect(log.join('\n')).toContain('"secret":"mesh/postgres-reader"');
    expect(wire.heard.some((m) => m.startsWith(`${t.names.prefix}.seat.mesh-vault.tool.keep`))).toBe(true);
    expect(projections.some((row) => row.includes('mesh/postgres-reader'))).toBe(true);
    expect(plantedFound({ 'the wire': wire.heard, LOG: log, projections }, planted)).toEqual([]);
  });
});
