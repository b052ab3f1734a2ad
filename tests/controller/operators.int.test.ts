import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { createOperatorKey, signCommand, type OperatorKey } from '../../src/adapters/operator-keys.js';
import { meshHome } from '../../src/config.js';
import { toolSubject, type ToolAnswer } from '../../src/controller/tool-server.js';
import { uniqueName } from '../helpers/names.js';
import { openTestMesh, type TestMesh } from '../helpers/test-mesh.js';

describe('operators sign their commands; the controller answers each tool call once', () => {
  let t: TestMesh;
  const dir = join(meshHome(), 'tmp', uniqueName('operators-'));
  let ada: OperatorKey;
  let grace: OperatorKey;

  beforeEach(async () => {
    t = await openTestMesh();
    ada = createOperatorKey(join(dir, uniqueName('ada-'), 'operator.key'), 'ada');
    grace = createOperatorKey(join(dir, uniqueName('grace-'), 'operator.key'), 'grace');
    // Genesis registers the first operator; then operators add each other.
    await t.run({ type: 'add-operator', operator: 'ada', publicKey: ada.publicKey });
    t.startTools();
  });
  afterEach(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const call = async (verb: string, payload: unknown): Promise<ToolAnswer> => {
    const reply = await t.nc.request(toolSubject(verb, t.names.prefix), JSON.stringify(payload), { timeout: 10_000 });
    return JSON.parse(reply.string()) as ToolAnswer;
  };
  const head = async () => (await t.jsm.streams.info(t.names.logStream)).state.last_seq;

  it('decides a signed command and records who sent it', async () => {
    const answer = await call('add-node', signCommand(ada, uniqueName('c'), { type: 'add-node', node: 'lab1' }, new Date()));
    expect(answer).toMatchObject({ ok: true, summary: 'node lab1 added (root /var/lib/mesh)' });
    const history = await t.log.readAggregate('node.lab1');
    expect(history.events[0]?.actor).toBe('operator:ada');
  });

  it('refuses an altered, unsigned, unknown or revoked command, saying which, and appends nothing', async () => {
    const before = await head();
    const signed = signCommand(ada, uniqueName('c'), { type: 'add-node', node: 'lab1' }, new Date());
    const altered = await call('add-node', { ...signed, command: { type: 'add-node', node: 'lab666' } });
    expect(altered).toMatchObject({ ok: false, refused: [{ what: 'signature', why: expect.stringContaining('altered') }] });
    const { signature: _dropped, ...unsigned } = signed;
    expect(await call('add-node', unsigned)).toMatchObject({ ok: false, refused: [{ what: 'signature', why: 'the command is not signed' }] });
    expect(await call('add-node', signCommand(grace, uniqueName('c'), { type: 'add-node', node: 'lab2' }, new Date()))).toMatchObject({ ok: false, refused: [{ what: 'grace', why: 'no such operator is registered' }] });
    expect(await call('assign', signed)).toMatchObject({ ok: false, error: { code: 'validation' } });
    expect(await head()).toBe(before);

    expect(await call('add-operator', signCommand(ada, uniqueName('c'), { type: 'add-operator', operator: 'grace', publicKey: grace.publicKey }, new Date()))).toMatchObject({ ok: true });
    expect(await call('revoke-operator', signCommand(ada, uniqueName('c'), { type: 'revoke-operator', operator: 'grace' }, new Date()))).toMatchObject({ ok: true });
    const afterRevocation = await head();
    expect(await call('add-node', signCommand(grace, uniqueName('c'), { type: 'add-node', node: 'lab3' }, new Date()))).toMatchObject({ ok: false, refused: [{ why: 'this operator was revoked' }] });
    expect(await head()).toBe(afterRevocation);
  });

  it('answers a call once however many controllers serve the tools', async () => {
    t.startTools();
    t.startTools();
    const answers: string[] = [];
    const replies = await t.nc.requestMany(toolSubject('add-node', t.names.prefix), JSON.stringify(signCommand(ada, uniqueName('c'), { type: 'add-node', node: 'lab4' }, new Date())), { maxWait: 1_500 });
    for await (const reply of replies) answers.push(reply.string());
    expect(answers).toHaveLength(1);
    expect(JSON.parse(answers[0] ?? '{}')).toMatchObject({ ok: true });
  });
});
