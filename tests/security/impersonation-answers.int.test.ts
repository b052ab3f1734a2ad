import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { pino } from 'pino';
import { busAuthenticator, newIdentity, signBytes } from '../../src/adapters/identity.js';
import { identityFromEnv } from '../../src/adapters/nats/connect.js';
import { makeSecret } from '../../src/adapters/vault-client.js';
import { meshHome } from '../../src/config.js';
import type { ImpersonationMetrics, SpeakerEntry } from '../../src/controller/speaker.js';
import type { ToolAnswer } from '../../src/controller/tool-server.js';
import { hostInbox, providerAnswerSubject } from '../../src/domain/bus/users.js';
import { canonicalJson } from '../../src/domain/canonical.js';
import { fetchAnswerSchema, vaultToolSubject, type FetchRequest } from '../../src/domain/secrets/vault-wire.js';
import { VaultStore } from '../../src/vault/store.js';
import { Vault } from '../../src/vault/vault.js';
import { testNatsUrl } from '../helpers/log.js';
import { uniqueName } from '../helpers/names.js';
import { openTestMesh, type TestMesh } from '../helpers/test-mesh.js';
import { testNode } from '../helpers/vault.js';

// Two more entries where a body could speak for someone else. A provider's answer comes on its own
// subject (only its module's user may publish there: the server's enforcement is proven in
// tests/security/bus-authority.int.test.ts), so here the harness publishes on that subject as the
// provider would. A vault fetch's answer goes to the asker's inbox: here the harness asks with
// host beta's inbox prefix, as beta's own connection does (tests/security/impersonation.int.test.ts
// shows the same for bus-identity over a server that enforces the composed users).

/** A connection whose answers come back under `inbox`, as that identity's connection's do. */
const connectWithInbox = (inbox: string): Promise<NatsConnection> => {
  const harness = identityFromEnv();
  return connect({ servers: testNatsUrl(), name: `as-${inbox}`, inboxPrefix: inbox, ...(harness ? { authenticator: busAuthenticator(harness.key) } : {}) });
};

const STORE = { name: 'store', provides: [{ provision: 'object-store', fields: { bucket: { type: 'string' } } }] };
const APP = { name: 'app', requires: [{ name: 'store', contract: 'object-store', provider: 'module' }] };

describe("a provider answers only what it provides; the vault answers only the node that asks", () => {
  let t: TestMesh;
  const findings: { entry: SpeakerEntry; identity: string }[] = [];
  const impersonation: ImpersonationMetrics = { impersonationRefused: (entry, identity) => void findings.push({ entry, identity }) };
  const head = async (): Promise<number> => (await t.jsm.streams.info(t.names.logStream)).state.last_seq;

  beforeAll(async () => {
    t = await openTestMesh({ impersonation });
    t.startProviderAnswers();
    await t.run({ type: 'register-module', manifest: STORE });
    await t.run({ type: 'register-module', manifest: APP });
    for (const node of ['core', 'edge', 'lab1']) await t.run({ type: 'add-node', node });
    await t.run({ type: 'assign', module: 'store', node: 'core', hold: [], pins: {}, values: {}, placements: {} });
    await t.run({ type: 'assign', module: 'app', node: 'lab1', hold: [], pins: {}, values: {}, placements: {} });
    // a second store, on edge, after lab1/app was resolved to core's
    await t.run({ type: 'assign', module: 'store', node: 'edge', hold: [], pins: {}, values: {}, placements: {} });
  });
  afterAll(async () => {
    await t.close();
  });

  const answerAs = async (provider: { node: string; module: string }, extra: Record<string, unknown> = {}) => {
    const body = { consumer: { node: 'lab1', module: 'app' }, requirement: 'store', values: { bucket: `${provider.node}-bucket` }, ...extra };
    return (await t.nc.request(providerAnswerSubject(t.names.prefix, provider.node, provider.module), JSON.stringify(body), { timeout: 10_000 })).json<ToolAnswer>();
  };

  it("refuses edge/store answering lab1/app's requirement core/store answers: nothing appended, the finding names edge's store; core's answer is recorded", async () => {
    const before = await head();
    const forged = await answerAs({ node: 'edge', module: 'store' });
    expect(forged.ok).toBe(false);
    if (!forged.ok) expect(forged.refused[0]?.why).toMatch(/^module store on edge speaks only for itself, and this answer-consumer names core\/store/);
    expect(findings).toContainEqual({ entry: 'answer-consumer', identity: 'module store on edge' });
    expect(await head()).toBe(before);

    const own = await answerAs({ node: 'core', module: 'store' }, { commandId: 'first-answer' });
    expect(own).toMatchObject({ ok: true, duplicate: false });
    const answered = [];
    for await (const event of t.log.read({ aggregate: 'consumer' })) if (event.type === 'consumer.answered') answered.push(event);
    // the command id a provider gives is kept in its own namespace: no provider can take one another will use
    expect(answered.map((e) => [e.actor, e.commandId])).toEqual([['module:core/store', 'answer:core.store:first-answer']]);
  });

  it("refuses host beta relaying a fetch alpha signed, naming beta in the log line; alpha's own request is answered", async () => {
    const prefix = uniqueName('v');
    const controller = newIdentity();
    const alpha = testNode('alpha');
    const dataDir = join(meshHome(), 'tmp', uniqueName('vault-'));
    mkdirSync(dataDir, { recursive: true });
    const lines: { entry?: string; identity?: string; claimed?: string; msg: string }[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line) as (typeof lines)[number]) });
    const vault = new Vault(t.nc, { prefix, controllerKey: controller.publicKey, store: new VaultStore({ dataDir }), logger });
    vault.start();
    const asBeta = await connectWithInbox(hostInbox('beta'));
    const asAlpha = await connectWithInbox(hostInbox('alpha'));
    try {
      await makeSecret(t.nc, { prefix, controller, secret: 'db', purpose: 'db of alpha', version: 1, recipients: [alpha.recipient], timeoutMs: 3_000 });
      const request: FetchRequest = { secret: 'db', node: 'alpha', at: new Date().toISOString(), nonce: randomBytes(16).toString('base64') };
      const body = JSON.stringify({ request, signature: signBytes(alpha.host, new TextEncoder().encode(canonicalJson(request))) });
      const ask = async (nc: NatsConnection) => fetchAnswerSchema.parse((await nc.request(vaultToolSubject(prefix, 'fetch'), body, { timeout: 3_000 })).json());

      const relayed = await ask(asBeta);
      expect(relayed.ok).toBe(false);
      if (!relayed.ok) expect(relayed.refused[0]).toMatchObject({ what: 'request.node', why: expect.stringMatching(/^host beta speaks only for itself, and this vault-fetch names node alpha/) });
      expect(lines).toContainEqual(expect.objectContaining({ entry: 'vault-fetch', identity: 'host beta', claimed: 'node alpha' }));
      // nothing was handed out and the request was not spent: alpha's own asking is answered
      expect((await ask(asAlpha)).ok).toBe(true);
    } finally {
      vault.stop();
      await asBeta.close();
      await asAlpha.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
