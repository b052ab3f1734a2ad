import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { askBusIdentity } from '../../src/adapters/bus-identity-client.js';
import { newEnrolmentToken } from '../../src/adapters/enrolment-tokens.js';
import { moduleBusIdentity, newIdentity, nkeyOf } from '../../src/adapters/identity.js';
import { fromBase64 } from '../../src/adapters/key-files.js';
import { newKeyPair } from '../../src/adapters/sealing.js';
import { busIdentityAnswerSchema, busIdentityToolSubject } from '../../src/domain/bus/module-identity.js';
import type { Refusal } from '../../src/domain/refusal.js';
import { toolSubject } from '../../src/controller/tool-server.js';
import { fixtureManifest } from '../helpers/given.js';
import { openTestMesh, type TestMesh } from '../helpers/test-mesh.js';

// The mesh-controller seat's bus-identity tool: a module's key, derived from the controller's,
// handed out sealed to the node the module is assigned to — and to nobody else.

describe("the controller's bus-identity tool", () => {
  let t: TestMesh;
  const controllerKey = newIdentity();
  const alpha = newKeyPair();
  const beta = newKeyPair();

  const enrolNode = async (node: string, sealing: { publicKey: string }) => {
    const token = newEnrolmentToken();
    await t.run({ type: 'issue-enrolment-token', tokenId: token.tokenId, verifier: token.verifier, publicKey: token.publicKey, node, expiresAt: new Date(Date.now() + 600_000).toISOString() });
    await t.run({ type: 'enrol-node', node, tokenId: token.tokenId, secret: token.token.split('.')[1] ?? '', publicKey: sealing.publicKey, busKey: newIdentity().publicKey, now: new Date().toISOString() });
  };
  const refusalOf = async (promise: Promise<unknown>): Promise<Refusal> => {
    try {
      await promise;
    } catch (error) {
      return error as Refusal;
    }
    throw new Error('expected a refusal, and the identity was handed out');
  };

  beforeAll(async () => {
    t = await openTestMesh();
    t.startBusIdentities(controllerKey);
    for (const name of ['local-bus', 'audit-logger']) await t.run({ type: 'register-module', manifest: fixtureManifest(name) });
    for (const node of ['alpha', 'beta', 'gamma']) await t.run({ type: 'add-node', node, address: '127.0.0.1' });
    await enrolNode('alpha', alpha);
    await enrolNode('beta', beta);
    await t.run({ type: 'assign', module: 'local-bus', node: 'alpha', hold: ['mesh-broker'], pins: {}, values: {}, placements: {} });
    await t.run({ type: 'assign', module: 'audit-logger', node: 'alpha', hold: [], pins: {}, values: {}, placements: {} });
    await t.run({ type: 'assign', module: 'local-bus', node: 'beta', hold: [], pins: {}, values: {}, placements: {} });
    await t.run({ type: 'assign', module: 'audit-logger', node: 'gamma', hold: [], pins: {}, values: {}, placements: {} });
  });
  afterAll(async () => {
    await t.close();
  });

  it('hands the node its module’s identity, sealed to it: the derived key, its inbox, the subjects its consumes derive', async () => {
    const identity = await askBusIdentity(t.nc, { node: 'alpha', module: 'audit-logger', prefix: t.names.prefix, sealingSecretKey: alpha.secretKey });
    const derived = moduleBusIdentity(controllerKey, 'alpha', 'audit-logger');
    expect(identity).toEqual({
      node: 'alpha',
      module: 'audit-logger',
      nkey: nkeyOf(derived.publicKey),
      seed: Buffer.from(fromBase64(derived.secretKey).subarray(0, 32)).toString('base64'),
      inbox: '_INBOX.audit-logger.alpha',
      subjects: [`${t.names.prefix}.mod.*.event.>`, `${t.names.prefix}.seat.*.event.>`],
    });
  });

  it('carries nothing in the clear: the answer is a sealed box, and another node cannot open it', async () => {
    const reply = await t.nc.request(busIdentityToolSubject(t.names.prefix), JSON.stringify({ node: 'alpha', module: 'audit-logger' }), { timeout: 5_000 });
    const answer = busIdentityAnswerSchema.parse(reply.json());
    expect(answer.ok).toBe(true);
    const seed = Buffer.from(fromBase64(moduleBusIdentity(controllerKey, 'alpha', 'audit-logger').secretKey).subarray(0, 32)).toString('base64');
    expect(reply.string()).not.toContain(seed);
    expect(reply.string()).not.toContain('_INBOX.audit-logger');
    // beta asks for alpha's module and tries to open the answer with its own key
    const refusal = await refusalOf(askBusIdentity(t.nc, { node: 'alpha', module: 'audit-logger', prefix: t.names.prefix, sealingSecretKey: beta.secretKey }));
    expect(refusal.code).toBe('refused');
    expect(refusal.problems.map((p) => p.why)).toEqual(["it is not sealed to this node's key"]);
  });

  it('refuses a module not assigned to the node that asks, naming what and why', async () => {
    const refusal = await refusalOf(askBusIdentity(t.nc, { node: 'beta', module: 'audit-logger', prefix: t.names.prefix, sealingSecretKey: beta.secretKey }));
    expect(refusal.problems).toEqual([{ what: 'beta/audit-logger', why: 'module audit-logger is not assigned to node beta', remedy: 'assign it first: mesh assign audit-logger beta' }]);
  });

  it('refuses a module that is not on the bus, and a node that has not enrolled', async () => {
    const bus = await refusalOf(askBusIdentity(t.nc, { node: 'beta', module: 'local-bus', prefix: t.names.prefix, sealingSecretKey: beta.secretKey }));
    expect(bus.problems.map((p) => p.why)).toEqual(['module local-bus does not require mesh-bus, so it has no identity on the bus']);
    const gamma = await refusalOf(askBusIdentity(t.nc, { node: 'gamma', module: 'audit-logger', prefix: t.names.prefix, sealingSecretKey: beta.secretKey }));
    expect(gamma.problems.map((p) => p.why)).toEqual(['it has not enrolled, so there is no key to seal its module identities to']);
  });

  it('is one of the mesh-controller seat’s tools', () => {
    expect(busIdentityToolSubject(t.names.prefix)).toBe(toolSubject('bus-identity', t.names.prefix));
  });

  it('refuses a request that is not one', async () => {
    const reply = await t.nc.request(busIdentityToolSubject(t.names.prefix), JSON.stringify({ node: 'alpha' }), { timeout: 5_000 });
    const answer = busIdentityAnswerSchema.parse(reply.json());
    expect(answer.ok).toBe(false);
    if (!answer.ok) expect(answer.refused[0]).toMatchObject({ what: 'request', remedy: 'send { node, module }' });
  });
});
