import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { Agent } from '../../src/agent/agent.js';
import { stopRecordedProcesses } from '../../src/agent/left-running.js';
import { meshHome } from '../../src/config.js';
import { derivedLogin } from '../../src/domain/answers/login.js';
import { RefusedError } from '../../src/errors.js';
import { providerAnswerSubject } from '../../src/domain/bus/users.js';
import { FAST } from '../agent/harness.js';
import { testNatsUrl } from '../helpers/log.js';
import { uniqueName } from '../helpers/names.js';
import { openTestMesh, waitFor, type TestMesh } from '../helpers/test-mesh.js';
import { enrolAgentNode } from '../helpers/host-keys.js';

// Issue 124 against the real servers and an agent: a consumer told what its provider derived for
// it. Until the provider answers, the consumer's node is not sent a declaration with a blank in
// it: the refusal stated names what it waits for; a bad answer appends nothing; the answer reaches
// the running process.

const STORE = {
  name: 'store',
  provides: [{ provision: 'object-store', fields: { bucket: { type: 'string' }, login: { type: 'string' }, key: { type: 'string', secret: true } }, answers: { login: '${consumer.login}' } }],
};

describe('a provider’s derived values reach the consumer (${bound:…})', () => {
  let t: TestMesh;
  let root: string;
  const agents: Agent[] = [];
  const consumer = 'app-with-a-rather-long-name';
  const node = 'lab1';
  const seen = (): string | undefined => {
    const path = join(root, 'nodes', node, consumer, 'data', 'told');
    return existsSync(path) ? readFileSync(path, 'utf8') : undefined;
  };
  const head = async (): Promise<number> => (await t.jsm.streams.info(t.names.logStream)).state.last_seq;

  beforeEach(async () => {
    root = join(meshHome(), 'tmp', uniqueName('bound-'));
    mkdirSync(root, { recursive: true });
    t = await openTestMesh();
    await t.startController();
    t.startProviderAnswers();
    await t.run({ type: 'register-module', manifest: STORE });
    await t.run({
      type: 'register-module',
      manifest: {
        name: consumer,
        requires: [
          { name: 'store', contract: 'object-store', provider: 'module' },
          { name: 'data', contract: 'directory', provider: 'host', mode: '0755' },
        ],
        resources: {
          directories: [{ requirement: 'data' }],
          processes: [{ name: 'app', run: ['node', '-e', "require('fs').writeFileSync(process.argv[1] + '/told', process.argv[2] + ' ' + process.argv[3]); setInterval(() => {}, 1 << 30)", '${data.path}', '${bound:store.bucket}', '${store.login}'] }],
        },
      },
    });
    await t.run({ type: 'add-node', node: 'core' });
    await t.run({ type: 'add-node', node, root: join(root, 'nodes', node) });
    await t.run({ type: 'assign', module: 'store', node: 'core', hold: [], pins: {}, values: {}, placements: {} });
    await t.run({ type: 'assign', module: consumer, node, hold: [], pins: {}, values: {}, placements: {} });
    await enrolAgentNode(t, node, join(root, 'agents', node));
    const agent = new Agent({ node, natsUrl: testNatsUrl(), stateDir: join(root, 'agents', node), controllerKey: t.controllerKey.publicKey, wire: { prefix: t.names.prefix, nodesStream: t.names.nodesStream }, timings: FAST, logger: pino({ level: 'silent' }) });
    await agent.start();
    agents.push(agent);
  });

  afterEach(async () => {
    for (const agent of agents.splice(0)) await agent.stop();
    stopRecordedProcesses(join(root, 'agents', node), 'SIGKILL');
    await t.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('waits, naming the provider and the field, until the provider answers; a bad answer appends nothing; the answer and a 20-character login reach the process', async () => {
    const refusal = await waitFor('the refusal naming what the declaration waits for', async () => {
      for await (const event of t.log.read({ aggregate: `node.${node}` })) if (event.type === 'declaration.refused' && JSON.stringify(event.data).includes('${bound:store.bucket} waits for core/store to answer bucket')) return event;
      return undefined;
    });
    expect(refusal).toBeDefined();
    expect((await t.declarationOf(node))?.assignments ?? []).toEqual([]);
    expect(seen()).toBeUndefined();

    const answer = (values: Record<string, string>) => t.run({ type: 'answer-consumer', provider: { node: 'core', module: 'store' }, consumer: { node, module: consumer }, requirement: 'store', values });
    const bads: Record<string, string>[] = [{ bucket: '' }, { key: 'a-secret' }, { region: 'eu' }];
    for (const bad of bads) {
      const before = await head();
      await expect(answer(bad)).rejects.toBeInstanceOf(RefusedError);
      expect(await head()).toBe(before);
    }

    // The provider answers as itself, on its own subject (the server vouches for who it is), and is recorded as the actor.
    const body = { consumer: { node, module: consumer }, requirement: 'store', values: { bucket: 'lab1-app-files' } };
    const reply = (await t.nc.request(providerAnswerSubject(t.names.prefix, 'core', 'store'), JSON.stringify(body), { timeout: 10_000 })).json<{ ok: boolean }>();
    expect(reply).toMatchObject({ ok: true });
    const answered = [];
    for await (const event of t.log.read({ aggregate: 'consumer' })) if (event.type === 'consumer.answered') answered.push(event);
    expect(answered.map((e) => [e.actor, e.data])).toEqual([['module:core/store', { provider: { node: 'core', module: 'store' }, consumer: { node, module: consumer }, requirement: 'store', values: { bucket: 'lab1-app-files' } }]]);
    const told = await waitFor('the process told its bucket and login', async () => seen());
    const login = derivedLogin(node, consumer);
    expect(told).toBe(`lab1-app-files ${login}`);
    expect(login.length).toBeLessThanOrEqual(20);
  });
});
