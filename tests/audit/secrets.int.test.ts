import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { DeliverPolicy, jetstream } from '@nats-io/jetstream';
import { enrol, hostKey, nodeIdentity } from '../../src/adapters/enrolment-client.js';
import { loadOperatorKey, signCommand, type OperatorKey } from '../../src/adapters/operator-keys.js';
import { meshHome } from '../../src/config.js';
import { CommandDispatcher } from '../../src/controller/command-dispatcher.js';
import { tokenVerifier } from '../../src/domain/nodes/enrolment.js';
import { fixtureManifest } from '../helpers/given.js';
import { testNatsUrl } from '../helpers/log.js';
import { uniqueName } from '../helpers/names.js';
import { openTestMesh, waitFor, type TestMesh } from '../helpers/test-mesh.js';

// Known secrets planted through every path that handles one — an enrolment token's secret, the
// bus credentials sealed to a joining node, an operator's signing key (which signs commands the
// log now keeps), a secret offered as an operator value (refused), and a consumer's database
// password, which the mesh only ever names — and then the whole log, every message's raw bytes,
// is searched for them.

describe('no secret enters the log', () => {
  let t: TestMesh;
  let ada: OperatorKey;
  let dispatcher: CommandDispatcher;
  let id = 0;
  const agentDir = join(meshHome(), 'tmp', uniqueName('agent-'));
  const send = (command: Record<string, unknown>) => dispatcher.dispatch(signCommand(ada, `${t.names.prefix}-${++id}`, command, new Date()));
  const assign = (module: string, node: string, options: { hold?: string[]; values?: Record<string, string> } = {}) =>
    send({ type: 'assign', module, node, hold: options.hold ?? [], pins: {}, values: options.values ?? {}, placements: {} });

  beforeAll(async () => {
    t = await openTestMesh();
    const env: Record<string, string> = { MESH_NATS_URL: testNatsUrl(), ...(await t.operatorCommands()) };
    ada = loadOperatorKey(env.MESH_OPERATOR_KEY ?? '');
    dispatcher = new CommandDispatcher(t.mesh);
    t.startEnrolment();
    await t.startController();
  });
  afterAll(async () => {
    await t.close();
    rmSync(agentDir, { recursive: true, force: true });
  });

  it('finds none of them anywhere in the log', async () => {
    const planted: Record<string, string> = {};

    // The operator's signing key: every command below is signed with it, and kept signed.
    planted['operator secret key'] = ada.secretKey;
    planted['operator key seed'] = Buffer.from(ada.secretKey, 'base64').subarray(0, 32).toString('base64');

    for (const name of ['nats', 'vault', 'postgres', 'gitea']) await send({ type: 'register-module', manifest: fixtureManifest(name) });
    await send({ type: 'add-node', node: 'novox' });
    await send({ type: 'add-node', node: 'lab1', root: '/srv/mesh' });
    await assign('nats', 'novox', { hold: ['mesh-broker'] });
    await assign('vault', 'novox', { hold: ['mesh-vault'] });
    await assign('postgres', 'novox', { hold: ['mesh-store'] });

    // A secret offered as an operator value is refused, and a refused command leaves nothing.
    planted['secret operator value'] = `planted-${randomBytes(12).toString('hex')}`;
    const head = await t.log.headSeq();
    await expect(assign('gitea', 'lab1', { hold: ['mesh-git'], values: { 'public-name': 'git.example', 'db-secret': planted['secret operator value'] } })).rejects.toMatchObject({ code: 'refused' });
    expect(await t.log.headSeq()).toBe(head);
    await assign('gitea', 'lab1', { hold: ['mesh-git'], values: { 'public-name': 'git.example' } });

    // A consumer's database password is named in its declaration, for the vault to fill on the node.
    const named = await waitFor('lab1’s declaration naming gitea’s database secret', async () => JSON.stringify(await t.declarationOf('lab1')).includes('${secret:postgres-database/lab1-gitea}'));
    expect(named).toBe(true);

    // An enrolment token's secret, and the keys of the node that joins with it.
    const tokenId = randomBytes(8).toString('hex');
    planted['enrolment token secret'] = randomBytes(24).toString('base64url');
    await send({ type: 'issue-enrolment-token', tokenId, verifier: tokenVerifier(planted['enrolment token secret']), node: 'lab1', expiresAt: new Date(Date.now() + 3_600_000).toISOString() });
    await enrol(t.nc, { node: 'lab1', token: `${tokenId}.${planted['enrolment token secret']}`, stateDir: agentDir, prefix: t.names.prefix });
    planted['node sealing secret key'] = nodeIdentity(agentDir).secretKey;
    planted['node bus secret key'] = hostKey(agentDir).secretKey;

    const messages = await jetstream(t.nc).consumers.get(t.names.logStream, { deliver_policy: DeliverPolicy.All });
    const last = await t.log.headSeq();
    const bodies: string[] = [];
    const iterator = await messages.consume();
    for await (const message of iterator) {
      bodies.push(new TextDecoder().decode(message.data));
      if (message.seq >= last) break;
    }
    iterator.stop();
    const log = bodies.join('\n');
    expect(log).toContain('"signature"'); // the signed commands are there to be searched
    expect(log).toContain('postgres-database/lab1-gitea'); // names are fine; values are not
    const found = Object.entries(planted).filter(([, value]) => log.includes(value) || log.includes(JSON.stringify(value).slice(1, -1)));
    expect(found.map(([what]) => what)).toEqual([]);
  });
});
