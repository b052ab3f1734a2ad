import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { stopRecordedProcesses } from '../../src/agent/left-running.js';
import { askBusIdentity } from '../../src/adapters/bus-identity-client.js';
import { hostKey, nodeIdentity } from '../../src/adapters/enrolment-client.js';
import { identityFromSeed } from '../../src/adapters/identity.js';
import { fromBase64 } from '../../src/adapters/key-files.js';
import { connectNats, type BusIdentity } from '../../src/adapters/nats/connect.js';
import { meshHome } from '../../src/config.js';
import { isAlive } from '../../src/dev/processes.js';
import { moduleBusIdentitySchema, type ModuleBusIdentity } from '../../src/domain/bus/module-identity.js';
import { hostInbox } from '../../src/domain/bus/users.js';
import type { Refusal } from '../../src/domain/refusal.js';
import { enforcingBusMesh, type EnforcingBusMesh } from '../helpers/enforcing-bus.js';
import { fixtureManifest } from '../helpers/given.js';
import { uniqueName } from '../helpers/names.js';
import { testMeshNames, waitFor, type TestMesh } from '../helpers/test-mesh.js';
// The audit logger from the fixture catalogue, run by a real agent as a real process, on a
// nats-server of its own whose only users are the ones the control plane composed: the test's mesh
// speaks as its controller, the agent as its node's host, and the audit logger as its own identity,
// handed to its node sealed and placed where `${bus.credential}` points. It consumes every event
// (`**`) and writes each to its log directory — the facts the controller states included.

describe('an audit logger consuming every event, as its own identity on an enforcing bus', () => {
  const dir = join(meshHome(), 'tmp', uniqueName('audit-logger-'));
  const nodeRoot = join(dir, 'nodes', 'alpha');
  const stateDir = join(dir, 'agent');
  const file = join(nodeRoot, 'audit-logger', 'logs', 'events.jsonl');
  const identityFile = join(nodeRoot, '.mesh', 'audit-logger', 'bus-identity.json');
  const name = uniqueName('t');
  const names = testMeshNames(name);
  let bus: EnforcingBusMesh | undefined;
  let url: string;
  let t: TestMesh;
  const connectWhenKnown = (label: string, identity: BusIdentity) => (bus as EnforcingBusMesh).connectWhenKnown(label, identity);
  const enrolNode = (node: string, nodeStateDir: string, token: string) => (bus as EnforcingBusMesh).enrolNode(node, nodeStateDir, token);
  const issueToken = (node: string) => (bus as EnforcingBusMesh).issueToken(node);
  const facts = async () => {
    const found = [];
    for await (const event of t.log.read({ aggregate: 'fact' })) found.push(event);
    return found;
  };
  const assign = (module: string, node: string, extra: { hold?: string[]; values?: Record<string, string> } = {}) =>
    t.run({ type: 'assign', module, node, hold: extra.hold ?? [], pins: {}, values: extra.values ?? {}, placements: {} });

  beforeAll(async () => {
    bus = await enforcingBusMesh(dir, names);
    t = bus.t;
    url = bus.url;
    for (const module of ['local-bus', 'audit-logger', 'greeter']) await t.run({ type: 'register-module', manifest: fixtureManifest(module) });
    for (const node of ['alpha', 'beta']) await t.run({ type: 'add-node', node, root: join(dir, 'nodes', node), address: '127.0.0.1' });
    await bus.startAgent('alpha', stateDir);
  });
  afterAll(async () => {
    await bus?.stopAgents();
    stopRecordedProcesses(stateDir, 'SIGKILL');
    await bus?.close();
  });

  it('writes the facts stated after it started, one JSON line each', async () => {
    await assign('local-bus', 'alpha', { hold: ['mesh-broker'], values: { 'nats-port': String(bus?.server.port) } });
    await assign('audit-logger', 'alpha');
    await waitFor('the audit logger running', async () => (await facts()).some((f) => f.type === 'fact.applied' && (f.data as { module: string }).module === 'audit-logger'), 60_000);
    expect(statSync(identityFile).mode & 0o777).toBe(0o600);
    expect(moduleBusIdentitySchema.parse(JSON.parse(readFileSync(identityFile, 'utf8')))).toMatchObject({
      node: 'alpha',
      module: 'audit-logger',
      inbox: '_INBOX.audit-logger.alpha',
      subjects: [`${names.prefix}.mod.*.event.>`, `${names.prefix}.seat.*.event.>`],
    });

    await assign('greeter', 'alpha', { values: { port: String(30_000 + Math.floor(Math.random() * 20_000)) } });
    const written = await waitFor('the greeter’s applied fact in the audit log', async () => {
      if (!existsSync(file)) return undefined;
      const lines = readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map((line) => JSON.parse(line) as { subject: string; event: { type: string; data: { module: string } } });
      return lines.find((l) => l.event.type === 'fact.applied' && l.event.data.module === 'greeter');
    }, 60_000);
    expect(written.subject).toBe(`${names.prefix}.seat.mesh-controller.event.applied`);
  });

  it('hands the identity to its node alone: another node cannot open it, and is refused one for a module it does not run', async () => {
    const betaState = join(dir, 'agent-beta');
    await enrolNode('beta', betaState, await issueToken('beta'));
    const beta = await connectWhenKnown('host-beta', { key: hostKey(betaState), inbox: hostInbox('beta') });
    const refusal = async (promise: Promise<unknown>): Promise<Refusal> => promise.then(() => Promise.reject(new Error('handed out')), (error: Refusal) => error);
    // beta asks for alpha's audit logger: refused, as beta speaks only for itself
    const forAlpha = await refusal(askBusIdentity(beta, { node: 'alpha', module: 'audit-logger', prefix: names.prefix, sealingSecretKey: nodeIdentity(betaState).secretKey }));
    expect(forAlpha.problems.map((p) => p.why)).toEqual([expect.stringContaining('host beta speaks only for itself, and this bus-identity names node alpha')]);
    // beta asks for the audit logger as if it ran it
    const notAssigned = await refusal(askBusIdentity(beta, { node: 'beta', module: 'audit-logger', prefix: names.prefix, sealingSecretKey: nodeIdentity(betaState).secretKey }));
    expect(notAssigned.problems).toEqual([{ what: 'beta/audit-logger', why: 'module audit-logger is not assigned to node beta', remedy: 'assign it first: mesh assign audit-logger beta' }]);
  });

  it('takes the identity away when the audit logger is unassigned: its file goes, and the server refuses its key', async () => {
    const identity: ModuleBusIdentity = moduleBusIdentitySchema.parse(JSON.parse(readFileSync(identityFile, 'utf8')));
    const asLogger: BusIdentity = { key: identityFromSeed(fromBase64(identity.seed)), inbox: identity.inbox };
    // while assigned, the key is let in
    await (await connectWhenKnown('audit-logger-by-hand', asLogger)).close();
    const pid = (() => {
      const records = JSON.parse(readFileSync(join(stateDir, 'records.json'), 'utf8')) as { key: string; running?: { pid: number } | null }[];
      return records.find((r) => r.key === 'audit-logger/audit-logger')?.running?.pid;
    })();

    await t.run({ type: 'unassign', module: 'audit-logger', node: 'alpha' });
    await waitFor('the identity file removed', async () => !existsSync(identityFile), 30_000);
    if (pid !== undefined) await waitFor('the audit logger stopped', async () => !isAlive(pid), 30_000);
    await waitFor('the audit logger’s key refused', async () => {
      try {
        const nc = await connectNats(url, { name: 'audit-logger-after', identity: asLogger });
        await nc.close();
        return false;
      } catch (error) {
        return /refused|authorization/i.test((error as Error).message);
      }
    }, 20_000);
  });
});
