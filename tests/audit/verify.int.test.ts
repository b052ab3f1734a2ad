import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import nacl from 'tweetnacl';
import { loadOperatorKey, signCommand, type OperatorKey } from '../../src/adapters/operator-keys.js';
import { CommandDispatcher } from '../../src/controller/command-dispatcher.js';
import type { Commit } from '../../src/domain/events/envelope.js';
import { runMesh } from '../helpers/cli.js';
import { testNatsUrl } from '../helpers/log.js';
import { openTestMesh, type TestMesh } from '../helpers/test-mesh.js';

// `mesh audit verify` walks the whole log again: a commit that does not decode and a signature that
// does not hold — forged with another key, altered after signing, or made by an operator after the
// log revoked them — are each reported with their sequence, and the walk exits non-zero.

interface Report {
  ok: boolean;
  commits: number;
  signatures: number;
  failures: { seq: number; kind: string; why: string }[];
}

describe('mesh audit verify', () => {
  let t: TestMesh;
  let env: Record<string, string>;
  let ada: OperatorKey;
  let dispatcher: CommandDispatcher;
  let id = 0;
  const send = (key: OperatorKey, command: Record<string, unknown>) => dispatcher.dispatch(signCommand(key, `${t.names.prefix}-${++id}`, command, new Date()));
  const verify = async (): Promise<{ code: number; report: Report }> => {
    const result = await runMesh(['audit', 'verify', '--json'], env);
    return { code: result.code, report: JSON.parse(result.stdout.trim()) as Report };
  };
  const publishRaw = async (aggregate: string, commit: unknown): Promise<number> =>
    (await t.nc.request(`${t.names.logPrefix}.${aggregate}`, JSON.stringify(commit), { timeout: 5_000 })).json<{ seq: number }>().seq;

  beforeAll(async () => {
    t = await openTestMesh();
    env = { MESH_NATS_URL: testNatsUrl(), ...(await t.operatorCommands()) };
    ada = loadOperatorKey(env.MESH_OPERATOR_KEY ?? '');
    dispatcher = new CommandDispatcher(t.mesh);
    await send(ada, { type: 'add-node', node: 'lab1' });
  });
  afterAll(async () => t.close());

  it('keeps the signed command with the events it caused, and finds nothing wrong in an honest log', async () => {
    const history = await t.log.readAggregate('node.lab1');
    expect(history.events[0]?.signed).toMatchObject({ operator: 'ada', command: { type: 'add-node', node: 'lab1' } });
    const { code, report } = await verify();
    expect(report.failures).toEqual([]);
    expect(report.signatures).toBe(1);
    expect(code).toBe(0);
  });

  it('reports a forged commit, an altered signed command, a signature after revocation and an unreadable commit, each by sequence', async () => {
    const stored = await t.jsm.streams.getMessage(t.names.logStream, { last_by_subj: `${t.names.logPrefix}.node.lab1` });
    const honest = stored?.json<Commit>();
    if (!honest?.command) throw new Error('the signed commit was not stored with its command');

    // Ada's real signature over a command she never sent: the payload was changed after signing.
    const altered: Commit = {
      ...honest,
      events: honest.events.map((event) => ({ ...event, aggregate: 'node.lab2', data: { ...(event.data as object), node: 'lab2' } })),
      command: { ...honest.command, command: { type: 'add-node', node: 'lab2' } },
    };
    const alteredSeq = await publishRaw('node.lab2', altered);

    // A commit claiming to be Ada's, signed with a key that is not hers.
    const stranger = nacl.sign.keyPair();
    const strangerKey = { operator: 'ada', publicKey: '', secretKey: Buffer.from(stranger.secretKey).toString('base64') };
    const forgedCommand = signCommand(strangerKey, 'forged-1', { type: 'add-node', node: 'lab3' }, new Date());
    const forged: Commit = { ...honest, events: honest.events.map((event) => ({ ...event, aggregate: 'node.lab3', commandId: 'forged-1', data: { ...(event.data as object), node: 'lab3' } })), command: forgedCommand };
    const forgedSeq = await publishRaw('node.lab3', forged);

    // Bob, added and then revoked: his own key, but signing after the log took it away.
    const bobPair = nacl.sign.keyPair();
    const bob: OperatorKey = { operator: 'bob', publicKey: Buffer.from(bobPair.publicKey).toString('base64'), secretKey: Buffer.from(bobPair.secretKey).toString('base64') };
    await send(ada, { type: 'add-operator', operator: 'bob', publicKey: bob.publicKey });
    await send(bob, { type: 'add-node', node: 'lab4' });
    await send(ada, { type: 'revoke-operator', operator: 'bob' });
    const late = signCommand(bob, 'late-1', { type: 'add-node', node: 'lab5' }, new Date());
    const lateSeq = await publishRaw('node.lab5', { ...honest, events: honest.events.map((event) => ({ ...event, aggregate: 'node.lab5', commandId: 'late-1', actor: 'operator:bob', data: { ...(event.data as object), node: 'lab5' } })), command: late });

    const unreadableSeq = await publishRaw('node.lab6', { firstVersion: 1, events: [{ type: 'node.added' }] });

    const { code, report } = await verify();
    expect(code).toBe(1);
    expect(report.ok).toBe(false);
    expect(report.failures.map((f) => [f.seq, f.kind])).toEqual([
      [alteredSeq, 'signature'],
      [forgedSeq, 'signature'],
      [lateSeq, 'signature'],
      [unreadableSeq, 'envelope'],
    ]);
    expect(report.failures[2]?.why).toContain('revoked');
    // Bob's command while he was an operator still holds.
    expect(report.signatures).toBe(7);

    const human = await runMesh(['audit', 'verify'], env);
    expect(human.code).toBe(1);
    expect(human.stdout).toContain(`seq ${unreadableSeq} node.lab6: envelope`);
  });
});
