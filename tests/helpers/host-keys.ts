import { randomBytes } from 'node:crypto';
import { jetstream, type PubAck } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { hostKey, nodeIdentity } from '../../src/adapters/enrolment-client.js';
import { newIdentity, type Identity } from '../../src/adapters/identity.js';
import { signedMessage } from '../../src/agent/report-signature.js';
import { tokenVerifier } from '../../src/domain/nodes/enrolment.js';
import { aliveSubject, reportSubject } from '../../src/domain/reports/report.js';
import type { TestMesh } from './test-mesh.js';

// A report or heartbeat counts only when its node signed it with the bus key it enrolled
// (controller/signed-report.ts). A test standing in for a node's agent enrols the node with a host
// key of its own, and signs what it publishes for it with that key, as the agent does.

/** Records `node` as enrolled with these keys, as the enrol tool records them. */
export const enrolKeys = async (t: Pick<TestMesh, 'run'>, node: string, keys: { publicKey: string; busKey: string }): Promise<void> => {
  const tokenId = randomBytes(8).toString('hex');
  await t.run({ type: 'issue-enrolment-token', tokenId, verifier: tokenVerifier('s'), node, expiresAt: new Date(Date.now() + 3_600_000).toISOString() });
  await t.run({ type: 'enrol-node', node, tokenId, secret: 's', publicKey: keys.publicKey, busKey: keys.busKey, now: new Date().toISOString() });
};

/** Enrols `node` with a fresh host key and returns it: what the test signs the node's reports with. */
export const enrolHost = async (t: Pick<TestMesh, 'run'>, node: string): Promise<Identity> => {
  const host = newIdentity();
  await enrolKeys(t, node, { publicKey: newIdentity().publicKey, busKey: host.publicKey });
  return host;
};

/** Enrols `node` with the keys its agent keeps (or makes now) in `stateDir`. */
export const enrolAgentNode = (t: Pick<TestMesh, 'run'>, node: string, stateDir: string): Promise<void> =>
  enrolKeys(t, node, { publicKey: nodeIdentity(stateDir).publicKey, busKey: hostKey(stateDir).publicKey });

/** Publishes `body` (an object is sent as its JSON) as `node`'s report, signed with `key`. */
export const publishSignedReport = (nc: NatsConnection, prefix: string, node: string, key: Identity, body: unknown): Promise<PubAck> => {
  const signed = signedMessage('report', key, typeof body === 'string' ? body : JSON.stringify(body));
  return jetstream(nc).publish(reportSubject(node, prefix), signed.body, { headers: signed.headers });
};

/** Publishes `body` as `node`'s heartbeat, signed with `key`. */
export const publishSignedBeat = (nc: NatsConnection, prefix: string, node: string, key: Identity, body: unknown): void => {
  const signed = signedMessage('heartbeat', key, typeof body === 'string' ? body : JSON.stringify(body));
  nc.publish(aliveSubject(node, prefix), signed.body, { headers: signed.headers });
};
