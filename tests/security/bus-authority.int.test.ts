import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { appendFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { pino } from 'pino';
import { meshHome } from '../../src/config.js';
import { enrol, hostKey, tokenBusIdentity } from '../../src/adapters/enrolment-client.js';
import { newEnrolmentToken } from '../../src/adapters/enrolment-tokens.js';
import { foldSnapshotWriterIdentity, moduleBusIdentity, newIdentity } from '../../src/adapters/identity.js';
import { renderBusUsers } from '../../src/adapters/nats/bus-users-file.js';
import { connectNats } from '../../src/adapters/nats/connect.js';
import { JetStreamEventLog } from '../../src/adapters/eventlog/jetstream-log.js';
import { LogWriter } from '../../src/adapters/eventlog/log-writer.js';
import { bootstrapControlPlane } from '../../src/controller/bootstrap.js';
import { BusAuthority } from '../../src/controller/bus-authority.js';
import { Controller } from '../../src/controller/controller.js';
import { MeshView } from '../../src/controller/mesh-view.js';
import { EnrolmentService } from '../../src/controller/enrolment-service.js';
import { MeshService } from '../../src/controller/mesh-service.js';
import { composeBusUsers, CONTROLLER_INBOX, hostInbox, personInbox, providerAnswerSubject, SNAPSHOT_WRITER_INBOX, type BusWire } from '../../src/domain/bus/users.js';
import { ProviderAnswerService } from '../../src/controller/provider-answers.js';
import { FoldSnapshotStore } from '../../src/adapters/nats/fold-snapshot-store.js';
import { moduleInbox } from '../../src/domain/bus/subjects.js';
import type { MeshCommand } from '../../src/domain/mesh/commands.js';
import { emptyMeshState } from '../../src/domain/mesh/state.js';
import { meshEventRegistry } from '../../src/domain/registry.js';
import { natsPidFile, natsSystemKeyFile, startNatsServer, stopNatsServer } from '../../src/dev/nats-server.js';
import { freePort } from '../../src/dev/ports.js';
import { probeBus } from '../../src/dev/security-probe.js';
import { fixtureManifest } from '../helpers/given.js';
import { uniqueName } from '../helpers/names.js';
import { waitFor } from '../helpers/test-mesh.js';

// A mesh on a nats-server of its own whose only users are the ones the control plane composed
// from the log — no harness, no administrator — attacked the way a process on the machine would.

const WIRE: BusWire = { prefix: 'mesh', logStream: 'LOG', logPrefix: 'mesh.log', nodesStream: 'NODES', controlStream: 'CONTROL', eventsStream: 'EVENTS' };

describe('the bus, enforced by the server from the composed user list', () => {
  const dir = join(meshHome(), 'tmp', uniqueName('bus-'));
  const usersFile = join(dir, 'bus-users.conf');
  const controllerKey = newIdentity();
  const operatorKey = newIdentity();
  const harnessKey = process.env.MESH_BUS_KEY;
  let server: { dir: string; port: number; usersFile: string };
  let url: string;
  let controllerNc: NatsConnection;
  let authority: BusAuthority;
  let controller: Controller;
  let view: MeshView;
  let enrolment: EnrolmentService;
  let mesh: MeshService;
  let n = 0;
  const run = (command: MeshCommand) => mesh.execute(command, { commandId: `bus-${++n}`, actor: 'operator:ada' });
  const knows = (publicKey: string) => async () => readFileSync(usersFile, 'utf8').includes(composeNkey(publicKey));
  const composeNkey = (publicKey: string) => renderBusUsers([{ kind: 'static', name: 'x', publicKey, inbox: 'x', permissions: { publish: { allow: ['x'] }, subscribe: { allow: ['x'] }, allowResponses: false } }]).match(/nkey: "([A-Z0-9]+)"/)?.[1] ?? '';
  /** The list is written before the server has reloaded it: a new identity is in once it can connect. */
  const connectWhenKnown = (name: string, identity: Parameters<typeof connectNats>[1]['identity']) =>
    waitFor(`${name} let in`, () => connectNats(url, { name, identity }).catch(() => undefined), 20_000);
  const connectionsOpen: { name: string; nc: NatsConnection; dropped: string[] }[] = [];
  const watchDrops = (name: string, nc: NatsConnection) => {
    const entry = { name, nc, dropped: [] as string[] };
    void (async () => {
      for await (const status of nc.status()) if (status.type === 'disconnect' || status.type === 'reconnect') entry.dropped.push(status.type);
    })();
    connectionsOpen.push(entry);
  };

  beforeAll(async () => {
    // Only the identities this mesh composes: the harness must not speak for anybody here.
    delete process.env.MESH_BUS_KEY;
    mkdirSync(dir, { recursive: true });
    writeFileSync(usersFile, renderBusUsers(composeBusUsers(emptyMeshState(), { wire: WIRE, controllerKey: controllerKey.publicKey, snapshotWriterKey: foldSnapshotWriterIdentity(controllerKey).publicKey, moduleKey: () => '', now: new Date() })));
    server = { dir, port: await freePort(), usersFile };
    url = (await startNatsServer(server)).url;
    controllerNc = await connectNats(url, { name: 'controller', persistent: true, identity: { key: controllerKey, inbox: CONTROLLER_INBOX } });
    const writer = new LogWriter(controllerNc, { stream: WIRE.logStream, key: controllerKey });
    const log = () => new JetStreamEventLog(controllerNc, { stream: WIRE.logStream, subjectPrefix: WIRE.logPrefix, registry: meshEventRegistry(), writer });
    await bootstrapControlPlane(controllerNc, log(), { stream: WIRE.logStream, subjectPrefix: WIRE.logPrefix, meshName: 'bus', actor: 'controller', controllerKey: controllerKey.publicKey });
    mesh = new MeshService(log());
    await run({ type: 'add-operator', operator: 'ada', publicKey: operatorKey.publicKey });
    for (const module of ['local-bus', 'greeter', 'caller', 'vault', 'telegram-sender', 'showcase']) await run({ type: 'register-module', manifest: fixtureManifest(module) });
    for (const node of ['alpha', 'beta']) await run({ type: 'add-node', node, address: '127.0.0.1' });
    await run({ type: 'assign', module: 'local-bus', node: 'alpha', hold: ['mesh-broker'], pins: {}, values: {}, placements: {} });
    await run({ type: 'assign', module: 'greeter', node: 'alpha', hold: ['front-desk'], pins: {}, values: {}, placements: {} });
    authority = new BusAuthority({ file: { file: usersFile, serverPidFile: natsPidFile(dir), system: { urls: url, keyFile: natsSystemKeyFile(server) } }, wire: WIRE, controller: controllerKey, logger: pino({ level: 'silent' }) });
    view = new MeshView(log(), { logger: pino({ level: 'silent' }) });
    view.start();
    controller = new Controller(controllerNc, view, log(), { names: { nodesStream: WIRE.nodesStream, controlStream: WIRE.controlStream, prefix: WIRE.prefix }, actor: 'controller', controllerKey, logger: pino({ level: 'silent' }), busAuthority: authority });
    await controller.start();
    enrolment = new EnrolmentService(controllerNc, new MeshService(log()), { prefix: WIRE.prefix, natsUrl: url, controllerKey: controllerKey.publicKey, logger: pino({ level: 'silent' }) });
    enrolment.start();
    await waitFor('the operator on the bus', knows(operatorKey.publicKey));
  });

  afterAll(async () => {
    enrolment?.stop();
    await controller?.stop();
    await view?.stop();
    for (const { nc } of connectionsOpen) await nc.close().catch(() => undefined);
    await controllerNc?.close();
    if (server) await stopNatsServer(server, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    if (harnessKey) process.env.MESH_BUS_KEY = harnessKey;
  });

  it('lets a node join with a token, as the token’s own user, and then connect as itself', async () => {
    const token = newEnrolmentToken();
    await run({ type: 'issue-enrolment-token', tokenId: token.tokenId, verifier: token.verifier, publicKey: token.publicKey, node: 'beta', expiresAt: new Date(Date.now() + 600_000).toISOString() });
    await waitFor('the token’s user', knows(token.publicKey));
    const stateDir = join(dir, 'agent-beta');
    const asToken = await connectWhenKnown('joining', tokenBusIdentity(token.token));
    try {
      await enrol(asToken, { node: 'beta', token: token.token, stateDir, prefix: WIRE.prefix });
    } finally {
      await asToken.close();
    }
    const host = hostKey(stateDir);
    await waitFor('beta’s host user', knows(host.publicKey));
    const hostNc = await connectWhenKnown('host-beta', { key: host, inbox: hostInbox('beta') });
    watchDrops('host beta', hostNc);
    await jetstream(hostNc).publish('mesh.control.beta.report', JSON.stringify({ not: 'a report' }));
  });

  it('refuses every attack on the list, at the server', async () => {
    const beta = hostKey(join(dir, 'agent-beta'));
    const outcomes = await probeBus({
      url,
      wire: WIRE,
      host: { node: 'beta', key: beta, otherNode: 'alpha' },
      module: { node: 'alpha', module: 'greeter', key: moduleBusIdentity(controllerKey, 'alpha', 'greeter'), otherModule: 'caller' },
      operator: { name: 'ada', key: operatorKey },
    });
    expect(outcomes.filter((o) => !o.refused)).toEqual([]);
    // refused by a permission, not by a connection that never got in (but for the two that must not get in)
    expect(outcomes.filter((o) => o.detail.startsWith('connection refused')).map((o) => o.attack)).toEqual(['an anonymous client connects', 'a key the mesh never composed connects']);
    expect(outcomes.length).toBeGreaterThanOrEqual(20);
    // and the log holds no forged commit
    const jsm = await jetstreamManager(controllerNc);
    const forged = await jsm.streams.getMessage('LOG', { last_by_subj: 'mesh.log.operator.mallory' }).catch(() => null);
    expect(forged).toBeNull();
  });

  it("lets the controller's snapshot writer alone keep the snapshot of its fold, replacing it with the old one's chunks purged", async () => {
    const writerNc = await connectNats(url, { name: 'snapshot-writer', identity: { key: foldSnapshotWriterIdentity(controllerKey), inbox: SNAPSHOT_WRITER_INBOX } });
    try {
      const store = new FoldSnapshotStore(controllerNc, { logStream: WIRE.logStream, fold: 'mesh', writer: async () => writerNc });
      await store.write({ seq: '1' }, new Uint8Array(200_000).fill(1), 'first');
      await store.write({ seq: '2' }, new Uint8Array(1_000).fill(2), 'second');
      const stored = await store.read();
      expect(stored?.meta).toEqual({ seq: '2' });
      expect(await stored?.bytes()).toEqual(new Uint8Array(1_000).fill(2));
      // one chunk and one metadata message: the first snapshot's two chunks are gone
      const info = await (await jetstreamManager(controllerNc)).streams.info(`OBJ_${store.bucket}`);
      expect(info.state.messages).toBe(2);
    } finally {
      await writerNc.close();
    }
  });

  it("lets an operator read the snapshot of the controller's fold (mesh … --at), and write neither it nor the log", async () => {
    const operatorNc = await connectNats(url, { name: 'ada-at', identity: { key: operatorKey, inbox: personInbox('ada') } });
    try {
      // The snapshot the test before kept, read as the CLI reads it.
      const store = new FoldSnapshotStore(operatorNc, { logStream: WIRE.logStream, fold: 'mesh', writer: async () => operatorNc });
      const stored = await store.read();
      expect(stored?.meta).toEqual({ seq: '2' });
      expect(await stored?.bytes()).toEqual(new Uint8Array(1_000).fill(2));
      const bucket = (await jetstreamManager(controllerNc)).streams;
      const before = (await bucket.info(`OBJ_${store.bucket}`)).state.last_seq;
      await expect(store.write({ seq: '3' }, new Uint8Array(10).fill(3), 'forged')).rejects.toThrow();
      await expect((await jetstreamManager(operatorNc)).streams.purge(`OBJ_${store.bucket}`)).rejects.toThrow();
      expect((await bucket.info(`OBJ_${store.bucket}`)).state.last_seq).toBe(before);
      // and the log: no commit of the operator's own
      const logBefore = (await bucket.info(WIRE.logStream)).state.last_seq;
      await expect(jetstream(operatorNc).publish(`${WIRE.logPrefix}.operator.ada`, '{}', { timeout: 2_000 })).rejects.toThrow();
      expect((await bucket.info(WIRE.logStream)).state.last_seq).toBe(logBefore);
    } finally {
      await operatorNc.close();
    }
  });

  it('lets each identity do what its declarations imply', async () => {
    const greeter = await connectNats(url, { name: 'greeter', identity: { key: moduleBusIdentity(controllerKey, 'alpha', 'greeter'), inbox: moduleInbox('greeter', 'alpha') } });
    const operator = await connectNats(url, { name: 'ada', identity: { key: operatorKey, inbox: personInbox('ada') } });
    const errors: string[] = [];
    for (const nc of [greeter, operator]) {
      void (async () => {
        for await (const status of nc.status()) if (status.type === 'error') errors.push(String(status.error));
      })();
    }
    await jetstream(greeter).publish('mesh.mod.greeter.event.greeted', '{}');
    // a holder of front-desk speaks in its namespace; an operator reads the log and the declarations
    greeter.publish('mesh.seat.front-desk.event.opened', '{}');
    const info = await (await jetstreamManager(operator)).streams.info('LOG');
    expect(info.state.last_seq).toBeGreaterThan(0);
    const stored = await (await jetstreamManager(controllerNc)).streams.getMessage('EVENTS', { last_by_subj: 'mesh.mod.greeter.event.greeted' });
    expect(stored?.subject).toBe('mesh.mod.greeter.event.greeted');
    await greeter.flush();
    expect(errors).toEqual([]);
    watchDrops('operator ada', operator);
    await greeter.close();
  });

  it('lets a provider answer its consumers as itself, on its own subject, and the controller records it as that provider', async () => {
    const answers = new ProviderAnswerService(controllerNc, new MeshService(new JetStreamEventLog(controllerNc, { stream: WIRE.logStream, subjectPrefix: WIRE.logPrefix, registry: meshEventRegistry(), writer: new LogWriter(controllerNc, { stream: WIRE.logStream, key: controllerKey }) })), { prefix: WIRE.prefix, logger: pino({ level: 'silent' }) });
    answers.start();
    try {
      const greeter = await connectNats(url, { name: 'greeter-answers', identity: { key: moduleBusIdentity(controllerKey, 'alpha', 'greeter'), inbox: moduleInbox('greeter', 'alpha') } });
      const body = { consumer: { node: 'beta', module: 'caller' }, requirement: 'greeting', values: { text: 'hello' } };
      const reply = (await greeter.request(providerAnswerSubject(WIRE.prefix, 'alpha', 'greeter'), JSON.stringify(body), { timeout: 10_000 })).json<{ ok: boolean; refused: { what: string; why: string }[] }>();
      // The server let it through and the controller decided it as alpha/greeter's answer (beta runs no caller here, so it is refused).
      expect(reply).toMatchObject({ ok: false, refused: [{ what: 'beta/caller', why: 'no such assignment' }] });
      await greeter.close();
    } finally {
      answers.stop();
    }
  });

  it('adds a module’s user live when it is assigned and removes it (closing its connection) when unassigned; nobody else is dropped', async () => {
    const showcase = moduleBusIdentity(controllerKey, 'beta', 'showcase');
    await expect(connectNats(url, { name: 'showcase-early', identity: { key: showcase, inbox: moduleInbox('showcase', 'beta') } })).rejects.toThrow(/refused/);
    await run({ type: 'assign', module: 'vault', node: 'alpha', hold: ['mesh-vault'], pins: {}, values: {}, placements: {} });
    await run({ type: 'assign', module: 'telegram-sender', node: 'alpha', hold: ['telegram-sender'], pins: {}, values: { 'chat-id': '1' }, placements: {} });
    await run({ type: 'assign', module: 'showcase', node: 'beta', hold: [], pins: {}, values: {}, placements: {} });
    await waitFor('showcase’s user', knows(showcase.publicKey));
    const nc = await connectWhenKnown('showcase', { key: showcase, inbox: moduleInbox('showcase', 'beta') });
    // a user of telegram-sender submits to it
    nc.publish('mesh.seat.telegram-sender.accept.send', '{}');
    await nc.flush();
    const closed = nc.closed();
    await run({ type: 'unassign', module: 'showcase', node: 'beta' });
    await waitFor('showcase’s user removed', async () => !(await knows(showcase.publicKey)()));
    const error = await Promise.race([closed, new Promise((r) => setTimeout(() => r('still open'), 15_000))]);
    expect(String(error)).not.toBe('still open');
    expect(connectionsOpen.map((c) => ({ name: c.name, dropped: c.dropped }))).toEqual([
      { name: 'host beta', dropped: [] },
      { name: 'operator ada', dropped: [] },
    ]);
  });

  it('puts the composed list back when a grant is added to the file by hand', async () => {
    const composed = readFileSync(usersFile, 'utf8');
    appendFileSync(usersFile, '# a hand-added grant\nauthorization { users: [ { user: mallory, password: mallory } ] }\n');
    await authority.sync(controller.mesh());
    expect(readFileSync(usersFile, 'utf8')).toBe(composed);
    await expect(connectNats(url, { name: 'mallory' })).rejects.toThrow(/refused|Authorization/i);
  });

  it('takes a removed node off the bus: its host is disconnected and refused, its unspent token too, and it is left an empty declaration', async () => {
    const joined = newEnrolmentToken();
    await run({ type: 'issue-enrolment-token', tokenId: joined.tokenId, verifier: joined.verifier, publicKey: joined.publicKey, node: 'gamma', expiresAt: new Date(Date.now() + 600_000).toISOString() });
    const spare = newEnrolmentToken();
    await run({ type: 'issue-enrolment-token', tokenId: spare.tokenId, verifier: spare.verifier, publicKey: spare.publicKey, node: 'gamma', expiresAt: new Date(Date.now() + 600_000).toISOString() });
    await waitFor('the tokens’ users', async () => (await knows(joined.publicKey)()) && (await knows(spare.publicKey)()));
    const stateDir = join(dir, 'agent-gamma');
    const asToken = await connectWhenKnown('joining gamma', tokenBusIdentity(joined.token));
    try {
      await enrol(asToken, { node: 'gamma', token: joined.token, stateDir, prefix: WIRE.prefix });
    } finally {
      await asToken.close();
    }
    const host = hostKey(stateDir);
    const gamma = await connectWhenKnown('host-gamma', { key: host, inbox: hostInbox('gamma') });
    await run({ type: 'assign', module: 'caller', node: 'gamma', hold: [], pins: {}, values: {}, placements: {} });
    const declared = async () => (await (await jetstreamManager(controllerNc)).streams.getMessage(WIRE.nodesStream, { last_by_subj: 'mesh.node.gamma.declare' }).catch(() => null))?.json<{ sequence: number; assignments: unknown[] }>();
    await waitFor('gamma’s declaration', async () => ((await declared())?.assignments.length ?? 0) > 0);
    const closed = gamma.closed();

    await run({ type: 'unassign', module: 'caller', node: 'gamma' });
    await run({ type: 'remove-node', node: 'gamma' });
    await waitFor('gamma’s host and tokens off the list', async () => !(await knows(host.publicKey)()) && !(await knows(spare.publicKey)()) && !(await knows(joined.publicKey)()));
    const error = await Promise.race([closed, new Promise((r) => setTimeout(() => r('still open'), 15_000))]);
    expect(String(error)).not.toBe('still open');
    await expect(connectNats(url, { name: 'host-gamma-again', identity: { key: host, inbox: hostInbox('gamma') } })).rejects.toThrow(/refused|Authorization/i);
    await expect(connectNats(url, { name: 'spare-token', identity: tokenBusIdentity(spare.token) })).rejects.toThrow(/refused|Authorization/i);
    // What it ran is declared away: the last declaration on its subject is empty.
    expect((await declared())?.assignments).toEqual([]);
    // Everyone else stays connected.
    expect(connectionsOpen.map((c) => ({ name: c.name, dropped: c.dropped }))).toEqual([
      { name: 'host beta', dropped: [] },
      { name: 'operator ada', dropped: [] },
    ]);
  });
});
