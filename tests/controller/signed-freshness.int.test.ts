import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { createOperatorKey, signCommand, type OperatorKey } from '../../src/adapters/operator-keys.js';
import { signBytes } from '../../src/adapters/identity.js';
import { RefusedCommandStore } from '../../src/adapters/nats/refused-commands.js';
import { meshHome } from '../../src/config.js';
import { CommandDispatcher } from '../../src/controller/command-dispatcher.js';
import { MeshService } from '../../src/controller/mesh-service.js';
import { planToolSubject, toolSubject, ToolServer, type PlanAnswer, type ToolAnswer } from '../../src/controller/tool-server.js';
import { signedBytes, type SignedCommand } from '../../src/domain/operators/signed-command.js';
import { fixtureManifest } from '../helpers/given.js';
import { runMesh } from '../helpers/cli.js';
import { testNatsUrl } from '../helpers/log.js';
import { uniqueName } from '../helpers/names.js';
import { openTestMesh, type TestMesh } from '../helpers/test-mesh.js';

// A signed command is good within the mesh's window of the controller's clock, for what it was
// signed for, once: one signed 10 minutes ago or ahead is refused naming the window; a plan's
// signature is not the verb's, nor the verb's a plan's; a command id refused is spent, so the
// refused command replayed once it could be carried out is refused again, naming the first
// refusal — also by a controller that takes over, which reads the same spent ids.

const MINUTE = 60_000;
const assign = { type: 'assign', module: 'distribution', node: 'lab1', hold: [], pins: {}, values: {}, placements: {} };

describe('signed commands expire, are bound to what they were signed for, and a refused id is spent', () => {
  let t: TestMesh;
  const dir = join(meshHome(), 'tmp', uniqueName('freshness-'));
  let ada: OperatorKey;
  let adaFile: string;
  const servers: ToolServer[] = [];

  /** A controller's tool server, as the controller process composes it: the spent ids kept beside the log. */
  const startController = (): void => {
    const spent = new RefusedCommandStore(t.nc, { logStream: t.names.logStream, prefix: t.names.prefix });
    const server = new ToolServer(t.nc, new CommandDispatcher(new MeshService(t.newLog()), { spent }), { prefix: t.names.prefix, logger: pino({ level: 'silent' }) });
    server.start();
    servers.push(server);
  };
  const stopControllers = (): void => {
    for (const server of servers.splice(0)) server.stop();
  };

  beforeEach(async () => {
    t = await openTestMesh();
    adaFile = join(dir, uniqueName('ada-'), 'operator.key');
    ada = createOperatorKey(adaFile, 'ada');
    await t.run({ type: 'add-operator', operator: 'ada', publicKey: ada.publicKey });
    await t.run({ type: 'add-node', node: 'lab1' });
    startController();
  });
  afterEach(async () => {
    stopControllers();
    await t.jsm.streams.delete(`${t.names.logStream}_REFUSED`).catch(() => undefined);
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const call = async (verb: string, payload: unknown): Promise<ToolAnswer> => (await t.nc.request(toolSubject(verb, t.names.prefix), JSON.stringify(payload), { timeout: 10_000 })).json<ToolAnswer>();
  const plan = async (verb: string, payload: unknown): Promise<PlanAnswer> => (await t.nc.request(planToolSubject(verb, t.names.prefix), JSON.stringify({ commands: [payload] }), { timeout: 10_000 })).json<PlanAnswer>();
  const head = async () => (await t.jsm.streams.info(t.names.logStream)).state.last_seq;
  const addNode = (node: string, at: Date, id = uniqueName('c')) => signCommand(ada, id, { type: 'add-node', node }, at);

  it('refuses a command signed 10 minutes ago, 10 minutes ahead, in 2001 or in 2099, naming the window, and appends nothing', async () => {
    const before = await head();
    for (const [at, off] of [
      [new Date(Date.now() - 10 * MINUTE), '(10 minutes ago)'],
      [new Date(Date.now() + 10 * MINUTE), '(10 minutes ahead)'],
      [new Date('2001-09-09T01:46:40.000Z'), 'days ago)'],
      [new Date('2099-01-01T00:00:00.000Z'), 'days ahead)'],
    ] as const) {
      const answer = await call('add-node', addNode('lab2', at));
      expect(answer).toMatchObject({ ok: false, error: { code: 'refused' }, refused: [{ what: 'time' }] });
      const why = answer.ok ? '' : (answer.refused[0]?.why ?? '');
      expect(why).toContain(`signed at ${at.toISOString()}, the controller's clock says `);
      expect(why).toContain(off);
      expect(why).toContain('the mesh accepts commands signed within 5 minutes');
    }
    // A signed time that is no time at all.
    const oddUnsigned = { commandId: uniqueName('c'), operator: 'ada', command: { type: 'add-node', node: 'lab2' }, time: 'yesterday', purpose: 'carry-out' as const };
    const odd = { ...oddUnsigned, signature: signBytes(ada, signedBytes(oddUnsigned)) };
    expect(await call('add-node', odd)).toMatchObject({ ok: false, refused: [{ what: 'time' }] });
    expect(await head()).toBe(before);
    expect(await t.log.readAggregate('node.lab2')).toMatchObject({ events: [] });
  });

  it('sets the window with mesh operator window, within its bounds', async () => {
    const env = { MESH_NATS_URL: testNatsUrl(), MESH_OPERATOR_KEY: adaFile, MESH_SUBJECT_PREFIX: t.names.prefix, MESH_LOG_STREAM: t.names.logStream, MESH_LOG_SUBJECT_PREFIX: t.names.logPrefix };
    const set = await runMesh(['operator', 'window', '10m', '--json'], env);
    expect(set.code).toBe(0);
    expect(JSON.parse(set.stdout)).toMatchObject({ ok: true, summary: "the mesh accepts commands signed within 10 minutes of the controller's clock (it was 5 minutes)" });
    expect((await t.log.readAggregate('operators.command-window')).events.map((e) => e.data)).toEqual([{ seconds: 600 }]);
    const short = await runMesh(['operator', 'window', '10s'], env);
    expect(short.code).toBe(2);
    expect(short.stderr).toContain('shorter than 30s');
  });

  it('takes the window from the log: an operator widens it, and every controller judges by it', async () => {
    const late = new Date(Date.now() - 10 * MINUTE);
    expect(await call('add-node', addNode('lab2', late))).toMatchObject({ ok: false, refused: [{ what: 'time' }] });
    expect(await call('set-command-window', signCommand(ada, uniqueName('c'), { type: 'set-command-window', seconds: 20 * 60 }, new Date()))).toMatchObject({
      ok: true,
      summary: "the mesh accepts commands signed within 20 minutes of the controller's clock (it was 5 minutes)",
    });
    expect(await call('set-command-window', signCommand(ada, uniqueName('c'), { type: 'set-command-window', seconds: 2 * 86_400 }, new Date()))).toMatchObject({ ok: false, refused: [{ what: 'seconds' }] });
    // A controller that starts now reads the window from the log, not from flags of its own.
    stopControllers();
    startController();
    expect(await call('add-node', addNode('lab2', late))).toMatchObject({ ok: true, summary: expect.stringContaining('node lab2 added') });
    const stale = await call('add-node', addNode('lab3', new Date(Date.now() - 30 * MINUTE)));
    expect(stale.ok ? '' : stale.refused[0]?.why).toContain('the mesh accepts commands signed within 20 minutes');
  });

  it("refuses a plan's signature sent as the verb, the verb's sent as a plan, the purpose changed under a signature, and a new command in the old form", async () => {
    const before = await head();
    const forPlan = signCommand(ada, uniqueName('c'), { type: 'add-node', node: 'lab2' }, new Date(), 'plan');
    // Planned, it is fine: it would add lab2.
    expect(await plan('add-node', forPlan)).toMatchObject({ ok: true });
    const asVerb = await call('add-node', forPlan);
    expect(asVerb).toMatchObject({ ok: false, error: { code: 'refused' }, refused: [{ what: 'purpose', why: expect.stringContaining('this signature was made for a plan') }] });
    // Relabelled as the verb's, the signature no longer holds.
    expect(await call('add-node', { ...forPlan, purpose: 'carry-out' })).toMatchObject({ ok: false, refused: [{ what: 'signature', why: expect.stringContaining('altered') }] });

    const forVerb = signCommand(ada, uniqueName('c'), { type: 'add-node', node: 'lab2' }, new Date());
    expect(await plan('add-node', forVerb)).toMatchObject({ ok: false, refused: [{ what: 'purpose', why: expect.stringContaining('made to carry the command out, not to plan it') }] });
    expect(await plan('add-node', { ...forVerb, purpose: 'plan' })).toMatchObject({ ok: false, refused: [{ what: 'signature' }] });

    // The old form (no purpose signed), as an older `mesh` signed it: it would serve a plan and the command alike.
    const unsigned = { commandId: uniqueName('c'), operator: 'ada', command: { type: 'add-node', node: 'lab2' }, time: new Date().toISOString() };
    const oldForm: SignedCommand = { ...unsigned, signature: signBytes(ada, signedBytes(unsigned)) };
    expect(await call('add-node', oldForm)).toMatchObject({ ok: false, refused: [{ what: 'purpose', why: expect.stringContaining('the form from before') }] });
    expect(await plan('add-node', oldForm)).toMatchObject({ ok: false, refused: [{ what: 'purpose' }] });
    expect(await head()).toBe(before);

    // Signed for what it is sent for, it is carried out.
    expect(await call('add-node', signCommand(ada, uniqueName('c'), { type: 'add-node', node: 'lab2' }, new Date()))).toMatchObject({ ok: true });
  });

  it('refuses a refused assign replayed after uncordon as spent, naming the first refusal, also once another controller took over', async () => {
    await t.run({ type: 'register-module', manifest: fixtureManifest('distribution') });
    await t.run({ type: 'cordon-node', node: 'lab1' });
    const id = uniqueName('assign-');
    const first = signCommand(ada, id, assign, new Date());
    const refused = await call('assign', first);
    expect(refused).toMatchObject({ ok: false, error: { code: 'refused' } });
    expect(JSON.stringify(refused)).toContain('cordoned');

    await t.run({ type: 'uncordon-node', node: 'lab1' });
    const before = await head();
    // The same bytes again, and the same command signed afresh under its id: both spent.
    for (const replay of [first, signCommand(ada, id, assign, new Date())]) {
      const answer = await call('assign', replay);
      expect(answer).toMatchObject({ ok: false, error: { code: 'refused' }, refused: [{ what: `--command-id ${id}` }] });
      const why = answer.ok ? '' : (answer.refused[0]?.why ?? '');
      expect(why).toContain('this command id was refused at ');
      expect(why).toContain('cordoned');
      expect(why).toContain('a command id that was refused is spent');
    }
    // A controller that takes over knows it too: the spent ids are beside the log, not in a process.
    stopControllers();
    startController();
    expect(await call('assign', signCommand(ada, id, assign, new Date()))).toMatchObject({ ok: false, refused: [{ what: `--command-id ${id}` }] });
    expect(await head()).toBe(before);
    expect((await t.log.readAggregate('assignment.lab1.distribution')).events).toEqual([]);

    // Under a new id, the same assign is carried out.
    expect(await call('assign', signCommand(ada, uniqueName('assign-'), assign, new Date()))).toMatchObject({ ok: true });
  });

  it('spends no id for a command whose signature does not hold, nor for a retry of one carried out', async () => {
    const id = uniqueName('c');
    const genuine = addNode('lab2', new Date(), id);
    // Someone without ada's key sends a command under the id ada will use: refused, and the id is not spent by it.
    expect(await call('add-node', { ...genuine, command: { type: 'add-node', node: 'lab666' } })).toMatchObject({ ok: false, refused: [{ what: 'signature' }] });
    expect(await call('add-node', genuine)).toMatchObject({ ok: true, duplicate: false });
    // Retried with a fresh signature under the same id, as the CLI retries: the earlier outcome, nothing appended.
    const at = await head();
    expect(await call('add-node', addNode('lab2', new Date(), id))).toMatchObject({ ok: true, duplicate: true });
    // Another command under that id is refused as a conflict, and does not spend the id: the first is still answered.
    expect(await call('add-node', addNode('lab9', new Date(), id))).toMatchObject({ ok: false, refused: [{ why: expect.stringContaining('this command id was already used') }] });
    expect(await call('add-node', addNode('lab2', new Date(), id))).toMatchObject({ ok: true, duplicate: true });
    expect(await head()).toBe(at);
  });
});
