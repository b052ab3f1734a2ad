import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/nats-core';
import { connectNats } from '../../src/adapters/nats/connect.js';
import { newIdentity, signBytes } from '../../src/adapters/identity.js';
import { open } from '../../src/adapters/sealing.js';
import { makeSecret } from '../../src/adapters/vault-client.js';
import { canonicalJson } from '../../src/domain/canonical.js';
import { fetchAnswerSchema, vaultToolSubject, type FetchRequest } from '../../src/domain/secrets/vault-wire.js';
import { VaultStore } from '../../src/vault/store.js';
import { testNatsUrl } from '../helpers/log.js';
import { uniqueName } from '../helpers/names.js';
import { fetchAs, openTestVault, testNode } from '../helpers/vault.js';

// The vault on a real nats-server: it makes a secret only when the controller's key signed the
// request, hands it only to a node the secret names, sealed to that node's key, refuses a forged
// or replayed request, and keeps its secrets encrypted across a restart.

describe('the vault', () => {
  let nc: NatsConnection;
  const controller = newIdentity();
  const alpha = testNode('alpha');
  const beta = testNode('beta');
  const vaults: ReturnType<typeof openTestVault>[] = [];
  const prefix = uniqueName('v');
  const make = (secret: string, recipients = [alpha.recipient], signer = controller) =>
    makeSecret(nc, { prefix, controller: signer, secret, purpose: `db of alpha/${secret}`, version: 1, recipients, timeoutMs: 3_000 });

  beforeAll(async () => {
    nc = await connectNats(testNatsUrl(), { name: 'vault-test' });
    vaults.push(openTestVault(nc, { prefix, controllerKey: controller.publicKey }));
  });
  afterAll(async () => {
    for (const vault of vaults) vault.remove();
    await nc.close();
  });

  it('makes a secret on the controller’s request and hands it, sealed, to a node it names', async () => {
    expect(await make('db-one')).toEqual({ made: true });
    const first = await fetchAs(nc, prefix, alpha, 'db-one');
    expect(first.version).toBe(1);
    expect(first.value.length).toBeGreaterThanOrEqual(40);
    // asked again, the same version keeps its value, and names its recipients again
    expect(await make('db-one', [alpha.recipient, beta.recipient])).toEqual({ made: false });
    expect(await fetchAs(nc, prefix, beta, 'db-one')).toEqual(first);
  });

  it('keeps the current version and a rotation’s new one, hands out each by number, and the current when none is named', async () => {
    const rotate = (version: number, current: number) => makeSecret(nc, { prefix, controller, secret: 'db-rotated', purpose: 'p', version, current, recipients: [alpha.recipient], timeoutMs: 3_000 });
    await make('db-rotated');
    const one = await fetchAs(nc, prefix, alpha, 'db-rotated');
    expect(await rotate(2, 1)).toEqual({ made: true });
    // the new version beside the current one: named, it is handed out; unnamed, the current one is
    const two = await fetchAs(nc, prefix, alpha, 'db-rotated', 2);
    expect(two.version).toBe(2);
    expect(two.value).not.toBe(one.value);
    expect(await fetchAs(nc, prefix, alpha, 'db-rotated')).toEqual(one);
    expect(await fetchAs(nc, prefix, alpha, 'db-rotated', 1)).toEqual(one);
    // abandoned, then a third made beside the first: the second is gone
    expect(await rotate(3, 1)).toEqual({ made: true });
    await expect(fetchAs(nc, prefix, alpha, 'db-rotated', 2)).rejects.toMatchObject({ problems: [expect.objectContaining({ why: 'the vault holds versions 1, 3 of db-rotated, not that one' })] });
    // retired: the third alone, and current
    expect(await rotate(3, 3)).toEqual({ made: false });
    expect((await fetchAs(nc, prefix, alpha, 'db-rotated')).version).toBe(3);
    await expect(fetchAs(nc, prefix, alpha, 'db-rotated', 1)).rejects.toMatchObject({ problems: [expect.objectContaining({ why: 'the vault holds versions 3 of db-rotated, not that one' })] });
  });

  it('refuses a node the secret does not name', async () => {
    await make('db-two');
    await expect(fetchAs(nc, prefix, beta, 'db-two')).rejects.toMatchObject({ problems: [expect.objectContaining({ why: expect.stringContaining('node beta is not a recipient of db-two') })] });
    await expect(fetchAs(nc, prefix, alpha, 'no-such-secret')).rejects.toMatchObject({ problems: [expect.objectContaining({ why: 'the vault holds no such secret' })] });
  });

  it('refuses a forged request: a fetch naming another node, a make not signed by the controller', async () => {
    await make('db-three');
    // beta signs a request that says it is alpha
    const forger = { ...alpha, host: beta.host, sealing: beta.sealing };
    await expect(fetchAs(nc, prefix, forger, 'db-three')).rejects.toMatchObject({ problems: [expect.objectContaining({ what: 'signature', why: 'the fetch request is not signed by the node it names' })] });
    await expect(make('db-forged', [beta.recipient], newIdentity())).rejects.toMatchObject({ problems: [expect.objectContaining({ what: 'signature', why: 'the make request is not signed by the controller' })] });
    await expect(fetchAs(nc, prefix, beta, 'db-forged')).rejects.toMatchObject({ problems: [expect.objectContaining({ why: 'the vault holds no such secret' })] });
  });

  it('does not answer a replayed request, and its first answer opens for the node alone', async () => {
    await make('db-four');
    const request: FetchRequest = { secret: 'db-four', node: 'alpha', at: new Date().toISOString(), nonce: randomBytes(16).toString('base64') };
    const body = JSON.stringify({ request, signature: signBytes(alpha.host, new TextEncoder().encode(canonicalJson(request))) });
    const ask = async () => fetchAnswerSchema.parse((await nc.request(vaultToolSubject(prefix, 'fetch'), body, { timeout: 3_000 })).json());
    const first = await ask();
    if (!first.ok) throw new Error(`the first request was refused: ${JSON.stringify(first.refused)}`);
    // whoever copied it off the wire holds a box only alpha's key opens
    expect(open(first.sealed, beta.sealing.secretKey)).toBeUndefined();
    expect(JSON.parse(open(first.sealed, alpha.sealing.secretKey) ?? '{}')).toMatchObject({ secret: 'db-four', node: 'alpha', nonce: request.nonce });
    expect(await ask()).toEqual({ ok: false, refused: [expect.objectContaining({ what: 'nonce', why: 'this request was answered before: a request is answered once' })] });
    // an old request, signed and never seen, is refused too
    const stale: FetchRequest = { ...request, at: new Date(Date.now() - 10 * 60_000).toISOString(), nonce: randomBytes(16).toString('base64') };
    const staleAnswer = fetchAnswerSchema.parse(
      (await nc.request(vaultToolSubject(prefix, 'fetch'), JSON.stringify({ request: stale, signature: signBytes(alpha.host, new TextEncoder().encode(canonicalJson(stale))) }), { timeout: 3_000 })).json(),
    );
    expect(staleAnswer).toEqual({ ok: false, refused: [expect.objectContaining({ what: 'at' })] });
  });

  it('keeps its secrets encrypted in 0600 files, and after a restart hands out the same value', async () => {
    const prefix2 = uniqueName('v');
    const first = openTestVault(nc, { prefix: prefix2, controllerKey: controller.publicKey });
    vaults.push(first);
    await makeSecret(nc, { prefix: prefix2, controller, secret: 'kept', purpose: 'kept across a restart', version: 1, recipients: [alpha.recipient] });
    const before = await fetchAs(nc, prefix2, alpha, 'kept');
    first.stop();
    const data = readFileSync(join(first.dataDir, 'secrets.json'), 'utf8');
    expect(data).toContain('"kept"');
    expect(data).not.toContain(before.value);
    for (const file of ['secrets.json', 'vault.key']) expect(statSync(join(first.dataDir, file)).mode & 0o777).toBe(0o600);
    // without its key, or with another, the data does not open, and the vault says so rather than start
    const otherKey = join(first.dataDir, uniqueName('other-'), 'vault.key');
    expect(() => new VaultStore({ dataDir: first.dataDir, keyFile: otherKey })).toThrow(/is there but its key .* is not/);
    new VaultStore({ dataDir: join(first.dataDir, 'elsewhere'), keyFile: otherKey });
    expect(() => new VaultStore({ dataDir: first.dataDir, keyFile: otherKey })).toThrow(/does not open under its key/);
    const again = openTestVault(nc, { prefix: prefix2, controllerKey: controller.publicKey, dataDir: first.dataDir });
    vaults.push(again);
    expect(await fetchAs(nc, prefix2, alpha, 'kept')).toEqual(before);
  });
});
