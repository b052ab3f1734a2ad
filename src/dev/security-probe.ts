import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { busAuthenticator, newIdentity, type Identity } from '../adapters/identity.js';
import { writerLeaseSubject } from '../adapters/nats/writer-lease.js';
import { writerToolSubject } from '../controller/tool-server.js';
import { busIdentityToolSubject } from '../domain/bus/module-identity.js';
import { foldSnapshotBucket, moduleInbox } from '../domain/bus/subjects.js';
import { vaultToolSubject } from '../domain/secrets/vault-wire.js';
import { hostInbox, personInbox, providerAnswerSubject, type BusWire } from '../domain/bus/users.js';

// The attacks a process on the mesh's machine would try against the bus, each tried for real
// against a running server: who may connect, who may say what, who may read what. Used by
// `npm run probe:security` against the local stack and by the tests against servers of their own;
// every attack must come back "refused".

export interface ProbeTargets {
  url: string;
  wire: BusWire;
  /** an enrolled node's host identity, and another node it must not speak for */
  host?: { node: string; key: Pick<Identity, 'secretKey'>; otherNode: string };
  /** a module assigned to a node, speaking on the bus as itself */
  module?: { node: string; module: string; key: Pick<Identity, 'secretKey'>; otherModule: string };
  operator?: { name: string; key: Pick<Identity, 'secretKey'> };
}

export interface AttackOutcome {
  attack: string;
  refused: boolean;
  /** the identity the attack is made as could not connect at all, so the attack itself was not tried */
  untried?: boolean;
  detail: string;
}

type Attempt = (nc: NatsConnection) => void | Promise<unknown>;

// A handshake on a busy machine can take seconds; an attack not tried is reported as untried, so
// patience here only costs time when the server is really away.
const CONNECT_TIMEOUT_MS = 15_000;

const connectAs = (url: string, key: Pick<Identity, 'secretKey'> | undefined, inbox: string | undefined, name: string) =>
  connect({ servers: url, name, maxReconnectAttempts: 0, timeout: CONNECT_TIMEOUT_MS, ...(key ? { authenticator: busAuthenticator(key) } : {}), ...(inbox ? { inboxPrefix: inbox } : {}) });

/**
 * Connects as the identity and tries one thing: refused when the server says so (a permissions
 * violation). A stranger refused at the door is refused; a member of the mesh (a host, a module,
 * an operator) that cannot connect at all means the attack was never tried, not that it failed.
 */
const tryAs = async (
  url: string,
  who: { key?: Pick<Identity, 'secretKey'>; inbox?: string; stranger?: boolean },
  subject: string,
  attempt: Attempt,
): Promise<{ refused: boolean; untried?: boolean; detail: string }> => {
  let nc: NatsConnection;
  try {
    nc = await connectAs(url, who.key, who.inbox, 'security-probe');
  } catch (error) {
    // A stranger is refused by the server's authorization, not by a server that is not there.
    if (who.stranger && /Authorization Violation/i.test((error as Error).message)) return { refused: true, detail: `connection refused: ${(error as Error).message}` };
    if (who.stranger) return { refused: false, untried: true, detail: `the server did not answer (${(error as Error).message}), so the attack was not tried` };
    return { refused: false, untried: true, detail: `could not connect as this member of the mesh (${(error as Error).message}), so the attack was not tried: is it on this mesh? (\`npm start\` raises the demo it attacks)` };
  }
  const violations: string[] = [];
  void (async () => {
    for await (const status of nc.status()) if (status.type === 'error') violations.push(String((status.error as Error)?.message ?? status.error));
  })().catch(() => undefined);
  try {
    await Promise.resolve(attempt(nc)).catch((error: unknown) => violations.push(`(${(error as Error).message})`));
    await nc.flush().catch(() => undefined);
    const deadline = Date.now() + 1_500;
    while (Date.now() < deadline && !violations.some((v) => v.includes('Permissions Violation') && v.includes(subject))) await new Promise((r) => setTimeout(r, 25));
    const violation = violations.find((v) => v.includes('Permissions Violation') && v.includes(subject));
    return violation ? { refused: true, detail: violation } : { refused: false, detail: `the server took it${violations.length > 0 ? ` (${violations.join('; ')})` : ''}` };
  } finally {
    await nc.close().catch(() => undefined);
  }
};

const publishTo = (subject: string, body = '{}'): Attempt => (nc) => nc.publish(subject, body);
const subscribeTo = (subject: string): Attempt => (nc) => void nc.subscribe(subject);
const requestTo = (subject: string): Attempt => (nc) => nc.request(subject, '', { timeout: 1_000 });

/** Every attack the targets allow, in order, each with its outcome. */
export const probeBus = async (targets: ProbeTargets): Promise<AttackOutcome[]> => {
  const { url, wire } = targets;
  const outcomes: AttackOutcome[] = [];
  const record = async (attack: string, who: { key?: Pick<Identity, 'secretKey'>; inbox?: string; stranger?: boolean }, subject: string, attempt: Attempt) =>
    outcomes.push({ attack, ...(await tryAs(url, who, subject, attempt)) });
  const forgedCommit = JSON.stringify({ firstVersion: 1, events: [{ type: 'operator.added', data: { operator: 'mallory' } }] });
  // The controller's snapshot of its fold: a planted one would be a mesh the log never said (the object store's metadata subject for the object `mesh`).
  const snapshotBucket = foldSnapshotBucket(wire.logStream);
  const snapshotMeta = `$O.${snapshotBucket}.M.${Buffer.from('mesh').toString('base64url')}==`;
  const forgedSnapshot = JSON.stringify({ name: 'mesh', bucket: snapshotBucket, nuid: 'forged', size: 0, chunks: 0, digest: '', metadata: { seq: '1' } });

  await record('an anonymous client connects', { stranger: true }, '', () => undefined);
  await record('a key the mesh never composed connects', { key: newIdentity(), inbox: '_INBOX.stranger', stranger: true }, '', () => undefined);

  if (targets.host) {
    const { node, key, otherNode } = targets.host;
    const me = { key, inbox: hostInbox(node) };
    await record(`host ${node} reports for ${otherNode}`, me, `${wire.prefix}.control.${otherNode}.report`, publishTo(`${wire.prefix}.control.${otherNode}.report`));
    await record(`host ${node} reads ${otherNode}'s declaration`, me, `${wire.prefix}.node.${otherNode}.declare`, requestTo(`$JS.API.DIRECT.GET.${wire.nodesStream}.${wire.prefix}.node.${otherNode}.declare`));
    await record(`host ${node} listens to ${otherNode}'s declarations`, me, `${wire.prefix}.node.${otherNode}.declare`, subscribeTo(`${wire.prefix}.node.${otherNode}.declare`));
    await record(`host ${node} listens to everything (live enrolment requests among it)`, me, '">"', subscribeTo('>'));
    await record(`host ${node} listens to the enrol tool`, me, `${wire.prefix}.seat.mesh-controller.tool.enrol`, subscribeTo(`${wire.prefix}.seat.mesh-controller.tool.enrol`));
    await record(`host ${node} answers for the bus-identity tool`, me, busIdentityToolSubject(wire.prefix), subscribeTo(busIdentityToolSubject(wire.prefix)));
    await record(`host ${node} appends operator.added mallory to the log`, me, `${wire.logPrefix}.operator.mallory`, publishTo(`${wire.logPrefix}.operator.mallory`, forgedCommit));
    await record(`host ${node} states a controller fact`, me, `${wire.prefix}.seat.mesh-controller.event.crash-looping`, publishTo(`${wire.prefix}.seat.mesh-controller.event.crash-looping`));
    await record(`host ${node} writes the controller's snapshot of its fold`, me, snapshotMeta, publishTo(snapshotMeta, forgedSnapshot));
    await record(`host ${node} asks the vault to make a secret (only the controller may)`, me, vaultToolSubject(wire.prefix, 'make'), publishTo(vaultToolSubject(wire.prefix, 'make')));
    await record(`host ${node} answers as the vault (every node's fetch would be its to read)`, me, vaultToolSubject(wire.prefix, 'fetch'), subscribeTo(vaultToolSubject(wire.prefix, 'fetch')));
    await record(`host ${node} reads the log`, me, `$JS.API.CONSUMER.CREATE.${wire.logStream}`, requestTo(`$JS.API.CONSUMER.CREATE.${wire.logStream}`));
  }

  if (targets.module) {
    const { node, module, key, otherModule } = targets.module;
    const me = { key, inbox: moduleInbox(module, node) };
    await record(`module ${module} publishes an event it did not declare`, me, `${wire.prefix}.mod.${module}.event.undeclared`, publishTo(`${wire.prefix}.mod.${module}.event.undeclared`));
    await record(`module ${module} publishes under ${otherModule}'s namespace`, me, `${wire.prefix}.mod.${otherModule}.event.greeted`, publishTo(`${wire.prefix}.mod.${otherModule}.event.greeted`));
    await record(`module ${module} reads its node's declaration`, me, `${wire.prefix}.node.${node}.declare`, requestTo(`$JS.API.DIRECT.GET.${wire.nodesStream}.${wire.prefix}.node.${node}.declare`));
    await record(`module ${module} acks another consumer's delivery`, me, `$JS.ACK.${wire.eventsStream}.someone_else`, publishTo(`$JS.ACK.${wire.eventsStream}.someone_else.1.1.1.1.1`));
    await record(`module ${module} listens on an operator's inbox`, me, `${personInbox('ada')}.>`, subscribeTo(`${personInbox('ada')}.>`));
    await record(`module ${module} listens on every inbox`, me, '_INBOX.>', subscribeTo('_INBOX.>'));
    await record(`module ${module} asks for a module's bus identity`, me, busIdentityToolSubject(wire.prefix), publishTo(busIdentityToolSubject(wire.prefix), JSON.stringify({ node, module: otherModule })));
    await record(`module ${module} writes the controller's snapshot of its fold`, me, snapshotMeta, publishTo(snapshotMeta, forgedSnapshot));
    await record(`module ${module} asks the vault to make a secret`, me, vaultToolSubject(wire.prefix, 'make'), publishTo(vaultToolSubject(wire.prefix, 'make')));
    await record(`module ${module} listens for the vault's make requests`, me, vaultToolSubject(wire.prefix, 'make'), subscribeTo(vaultToolSubject(wire.prefix, 'make')));
    await record(`module ${module} appends to the log`, me, `${wire.logPrefix}.operator.mallory`, publishTo(`${wire.logPrefix}.operator.mallory`, forgedCommit));
    await record(`module ${module} answers a consumer as ${otherModule}`, me, providerAnswerSubject(wire.prefix, node, otherModule), publishTo(providerAnswerSubject(wire.prefix, node, otherModule)));
  }

  if (targets.operator) {
    const { name, key } = targets.operator;
    const me = { key, inbox: personInbox(name) };
    await record(`operator ${name} appends to the log around the controller`, me, `${wire.logPrefix}.operator.mallory`, publishTo(`${wire.logPrefix}.operator.mallory`, forgedCommit));
    // a provider's answer is recorded as the provider's, unsigned: the server alone says who gave it
    const provider = targets.module ?? { node: 'alpha', module: 'greeter' };
    await record(`operator ${name} answers a consumer as ${provider.module}`, me, providerAnswerSubject(wire.prefix, provider.node, provider.module), publishTo(providerAnswerSubject(wire.prefix, provider.node, provider.module)));
    await record(`operator ${name} publishes a declaration`, me, `${wire.prefix}.node.x.declare`, publishTo(`${wire.prefix}.node.x.declare`));
    await record(`operator ${name} writes the controller's snapshot of its fold`, me, snapshotMeta, publishTo(snapshotMeta, forgedSnapshot));
    await record(`operator ${name} makes the snapshot bucket's stream`, me, `$JS.API.STREAM.CREATE.OBJ_${snapshotBucket}`, requestTo(`$JS.API.STREAM.CREATE.OBJ_${snapshotBucket}`));
    await record(`operator ${name} purges the snapshot bucket's stream`, me, `$JS.API.STREAM.PURGE.OBJ_${snapshotBucket}`, requestTo(`$JS.API.STREAM.PURGE.OBJ_${snapshotBucket}`));
    await record(`operator ${name} asks the vault to make a secret around the controller`, me, vaultToolSubject(wire.prefix, 'make'), publishTo(vaultToolSubject(wire.prefix, 'make')));
    await record(`operator ${name} deletes the log`, me, `$JS.API.STREAM.DELETE.${wire.logStream}`, requestTo(`$JS.API.STREAM.DELETE.${wire.logStream}`));
    await record(`operator ${name} takes the writer lease (to stand a controller of its own in as writer)`, me, writerLeaseSubject(wire.prefix), publishTo(writerLeaseSubject(wire.prefix), JSON.stringify({ holder: 'mallory' })));
  }
  if (targets.module) {
    const { node, module, key } = targets.module;
    const me = { key, inbox: moduleInbox(module, node) };
    await record(`module ${module} answers as the mesh writer (every command passed on would be its to decide)`, me, writerToolSubject('add-operator', wire.prefix), subscribeTo(writerToolSubject('add-operator', wire.prefix)));
  }
  return outcomes;
};
