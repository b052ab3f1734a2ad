import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { jetstream } from '@nats-io/jetstream';
import nacl from 'tweetnacl';
import { headers as natsHeaders } from '@nats-io/nats-core';
import { linkOf, PREV_HEADER, SIG_HEADER } from '../../src/adapters/eventlog/chain.js';
import { rawOf } from '../../src/adapters/eventlog/chain-reader.js';
import { newIdentity } from '../../src/adapters/identity.js';
import { toBase64 } from '../../src/adapters/key-files.js';
import { loadOperatorKey, signCommand, type OperatorKey } from '../../src/adapters/operator-keys.js';
import { CommandDispatcher } from '../../src/controller/command-dispatcher.js';
import type { Commit } from '../../src/domain/events/envelope.js';
import type { MeshError } from '../../src/errors.js';
import { runMesh } from '../helpers/cli.js';
import { testNatsUrl } from '../helpers/log.js';
import { openTestMesh, type TestMesh } from '../helpers/test-mesh.js';

// `mesh audit verify` walks the whole log again. Commits a client put on the log by going around
// the controller — a valid-looking commit, an operator "added" that way, a payload altered after
// signing — fail the writer's check (link and signature against the key the genesis names) and
// are named by sequence, with every other failure: an operator signature that does not hold, an
// operator added by no one who could, a commit that does not decode. A voided commit is listed
// as voided and no longer fails.

interface Report {
  ok: boolean;
  commits: number;
  signatures: number;
  writerKey: string | null;
  firstFailure: number | null;
  failures: { seq: number; kind: string; why: string }[];
  voided: { seq: number; voidSeq: number; actor: string; reason: string }[];
}

describe('mesh audit verify', () => {
  let t: TestMesh;
  let env: Record<string, string>;
  let ada: OperatorKey;
  let dispatcher: CommandDispatcher;
  let id = 0;
  const send = (key: OperatorKey, command: Record<string, unknown>) => dispatcher.dispatch(signCommand(key, `${t.names.prefix}-${++id}`, command, new Date()));
  const verify = async (extra: string[] = []): Promise<{ code: number; report: Report }> => {
    const result = await runMesh(['audit', 'verify', '--json', ...extra], env);
    return { code: result.code, report: JSON.parse(result.stdout.trim()) as Report };
  };
  /** As the attacker did: straight onto the log's subject with a client's connection, around the controller. */
  const publishRaw = async (aggregate: string, body: unknown, headers?: Parameters<ReturnType<typeof jetstream>['publish']>[2]): Promise<number> =>
    (await jetstream(t.nc).publish(`${t.names.logPrefix}.${aggregate}`, typeof body === 'string' ? body : JSON.stringify(body), headers)).seq;

  beforeAll(async () => {
    t = await openTestMesh();
    env = { MESH_NATS_URL: testNatsUrl(), ...(await t.operatorCommands()) };
    ada = loadOperatorKey(env.MESH_OPERATOR_KEY ?? '');
    dispatcher = new CommandDispatcher(t.mesh);
    await send(ada, { type: 'add-node', node: 'lab1' });
  });
  afterAll(async () => t.close());

  it('finds nothing wrong in an honest log, and holds its genesis to this machine’s controller key', async () => {
    const history = await t.log.readAggregate('node.lab1');
    expect(history.events[0]?.signed).toMatchObject({ operator: 'ada', command: { type: 'add-node', node: 'lab1' } });
    const { code, report } = await verify();
    expect(report.failures).toEqual([]);
    expect(report.signatures).toBe(1);
    expect(report.writerKey).toBe(t.controllerKey.publicKey);
    expect(code).toBe(0);

    const stranger = newIdentity().publicKey;
    const other = await verify(['--controller-key', stranger]);
    expect(other.code).toBe(1);
    expect(other.report.failures).toEqual([{ seq: 1, aggregate: `mesh.${t.names.prefix}`, kind: 'genesis', why: expect.stringContaining(`this machine's controller key (--controller-key) is ${stranger}`) }]);
  });

  it('names, by sequence, a forged commit, a forged operator, an altered payload, a signature after revocation and an unreadable commit', async () => {
    // Honest history first: bob is added, acts, and is revoked.
    const bobPair = nacl.sign.keyPair();
    const bob: OperatorKey = { operator: 'bob', publicKey: toBase64(bobPair.publicKey), secretKey: toBase64(bobPair.secretKey) };
    await send(ada, { type: 'add-operator', operator: 'bob', publicKey: bob.publicKey });
    await send(bob, { type: 'add-node', node: 'lab4' });
    await send(ada, { type: 'revoke-operator', operator: 'bob' });
    const honestMessage = await t.jsm.streams.getMessage(t.names.logStream, { last_by_subj: `${t.names.logPrefix}.node.lab1` });
    const honest = honestMessage?.json<Commit>();
    if (!honest?.command || !honestMessage) throw new Error('the signed commit was not stored with its command');
    const event = honest.events[0] as Commit['events'][number];

    // 1. A valid-looking commit, as the controller would have written it, published around it.
    const forgedSeq = await publishRaw('node.lab7', { firstVersion: 1, events: [{ ...event, id: 'forged-7', aggregate: 'node.lab7', actor: 'controller', commandId: 'forged-7', causationId: 'forged-7', correlationId: 'forged-7', data: { node: 'lab7', root: '/var/lib/mesh', address: null } }] });
    // 2. operator.added mallory, the same way.
    const mallory = nacl.sign.keyPair();
    const malloryKey: OperatorKey = { operator: 'mallory', publicKey: toBase64(mallory.publicKey), secretKey: toBase64(mallory.secretKey) };
    const malloryEvent = { ...event, id: 'mallory-0', type: 'operator.added', schemaVersion: 1, aggregate: 'operator.mallory', actor: 'controller', commandId: 'mallory', causationId: 'mallory', correlationId: 'mallory', data: { operator: 'mallory', publicKey: malloryKey.publicKey } };
    const mallorySeq = await publishRaw('operator.mallory', { firstVersion: 1, events: [malloryEvent] });
    // 3. The honest commit with its payload altered, under the honest signature and linked to the head as it is.
    const altered: Commit = { ...honest, events: honest.events.map((e) => ({ ...e, aggregate: 'node.lab2', data: { ...(e.data as object), node: 'lab2' } })), command: { ...honest.command, command: { type: 'add-node', node: 'lab2' } } };
    const head = await t.jsm.streams.getMessage(t.names.logStream, { seq: mallorySeq });
    const headers = natsHeaders();
    headers.set(SIG_HEADER, honestMessage.header.get(SIG_HEADER));
    headers.set(PREV_HEADER, toBase64(head ? linkOf(rawOf(head)).hash : new Uint8Array()));
    const alteredSeq = await publishRaw('node.lab2', altered, { headers });
    // 4. Bob, revoked, signing anyway.
    const late = signCommand(bob, 'late-1', { type: 'add-node', node: 'lab5' }, new Date());
    const lateSeq = await publishRaw('node.lab5', { ...honest, events: honest.events.map((e) => ({ ...e, aggregate: 'node.lab5', commandId: 'late-1', actor: 'operator:bob', data: { ...(e.data as object), node: 'lab5' } })), command: late });
    // 5. Not a commit at all.
    const unreadableSeq = await publishRaw('node.lab6', { firstVersion: 1, events: [{ type: 'node.added' }] });

    // Mallory's signed commands are not carried out: the controller holds at the first forgery.
    const refused = await dispatcher.dispatch(signCommand(malloryKey, 'mallory-1', { type: 'add-node', node: 'lab9' }, new Date())).catch((error: MeshError) => error);
    expect(refused).toMatchObject({ code: 'refused' });
    expect((refused as MeshError).message).toMatch(/no such operator|held at seq/);

    const { code, report } = await verify();
    expect(code).toBe(1);
    expect(report.ok).toBe(false);
    expect(report.firstFailure).toBe(forgedSeq);
    expect(report.failures.map((f) => [f.seq, f.kind])).toEqual([
      [forgedSeq, 'writer'],
      [mallorySeq, 'writer'],
      [mallorySeq, 'operator'],
      [alteredSeq, 'writer'],
      [alteredSeq, 'signature'],
      [lateSeq, 'writer'],
      [lateSeq, 'signature'],
      [unreadableSeq, 'writer'],
      [unreadableSeq, 'envelope'],
    ]);
    expect(report.failures[0]?.why).toContain('no writer signature');
    expect(report.failures[2]?.why).toContain('operator mallory was added by no operator');
    // The altered commit is linked where it stands: only its signature gives it away.
    expect(report.failures[3]?.why).toContain('does not verify under the log');
    expect(report.failures[3]?.why).not.toContain('link');
    expect(report.failures[6]?.why).toContain('revoked');
    // Bob's commands while he was an operator still hold; ada's three and bob's one, and the two forged ones.
    expect(report.signatures).toBe(6);

    const human = await runMesh(['audit', 'verify'], env);
    expect(human.code).toBe(1);
    expect(human.stdout).toContain(`seq ${mallorySeq} operator.mallory: operator: operator mallory was added by no operator's signed command`);
    expect(human.stdout).toContain(`9 failed, the first at seq ${forgedSeq}`);

    // An operator voids the unreadable one: the audit lists it as voided, and it fails no more.
    const voidSeq = (await runMesh(['log', 'void', String(unreadableSeq), '--reason', 'a client published it around the controller', '--json'], env)).stdout;
    expect(JSON.parse(voidSeq)).toMatchObject({ ok: true });
    const after = await verify();
    expect(after.report.failures.map((f) => f.seq)).not.toContain(unreadableSeq);
    expect(after.report.voided).toEqual([expect.objectContaining({ seq: unreadableSeq, actor: 'operator:ada', reason: 'a client published it around the controller' })]);
    expect(after.code).toBe(1);
  });

  it('refuses to void a commit that verifies, or one the log does not hold (exit 3)', async () => {
    const good = (await t.log.readAggregate('node.lab1')).events[0]?.seq ?? 0;
    const fine = await runMesh(['log', 'void', String(good), '--reason', 'testing'], env);
    expect(fine.code).toBe(3);
    expect(fine.stderr).toContain(`voiding log seq ${good} refused`);
    expect(fine.stderr).toContain('it reads and verifies');
    const beyond = await runMesh(['log', 'void', '999999', '--reason', 'testing'], env);
    expect(beyond.code).toBe(3);
    expect(beyond.stderr).toContain('the log holds no commit there');
    const unsaid = await runMesh(['log', 'void', String(good)], env);
    expect(unsaid.code).toBe(2);
    expect(unsaid.stderr).toContain('--reason');
  });
});
