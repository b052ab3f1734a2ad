import { describe, expect, it } from '@jest/globals';
import { MeshFixture } from '../../../tests/helpers/given.js';
import { composeDeclaration } from '../declarations/compose.js';
import { LOGIN_MAX, derivedLogin } from './login.js';

// Issue 124: a consumer told a value its provider derived for it.

const STORE = {
  name: 'store',
  provides: [{ provision: 'object-store', fields: { bucket: { type: 'string' }, login: { type: 'string' }, key: { type: 'string', secret: true } }, answers: { login: '${consumer.login}' } }],
};
const app = (name: string, run = ['app', '--bucket', '${bound:store.bucket}', '--login', '${store.login}']) => ({
  name,
  requires: [{ name: 'store', contract: 'object-store', provider: 'module' }],
  resources: { processes: [{ name: 'app', run }] },
});

const meshWithConsumer = (consumer = 'app', node = 'lab1'): MeshFixture => {
  const mesh = new MeshFixture().node('core').node(node);
  mesh.register(STORE);
  mesh.register(app(consumer));
  mesh.assign('store', 'core');
  mesh.assign(consumer, node);
  return mesh;
};

const answer = (values: Record<string, string>, provider = { node: 'core', module: 'store' }) => ({ type: 'answer-consumer' as const, provider, consumer: { node: 'lab1', module: 'app' }, requirement: 'store', values });

describe("a provider's answer for one consumer (${bound:…})", () => {
  it('waits, saying what for, until the provider answers — never an empty value — then fills it in', () => {
    const mesh = meshWithConsumer();
    const waiting = composeDeclaration(mesh.state, 'lab1');
    expect(waiting.ok).toBe(false);
    if (!waiting.ok) expect(waiting.problems).toEqual([expect.objectContaining({ what: 'lab1/app resources.processes.app.run', why: '${bound:store.bucket} waits for core/store to answer bucket for lab1/app' })]);
    expect(mesh.run(answer({ bucket: 'lab1-app-files' })).map((e) => e.type)).toEqual(['consumer.answered']);
    // The same answer again (a provider answering on every pass) records nothing; another does.
    expect(mesh.run(answer({ bucket: 'lab1-app-files' }))).toEqual([]);
    const composed = composeDeclaration(mesh.state, 'lab1');
    if (!composed.ok) throw new Error(JSON.stringify(composed.problems));
    expect(composed.declaration.assignments[0]?.resources[0]).toMatchObject({ run: ['app', '--bucket', 'lab1-app-files', '--login', 'lab1-app'] });
  });

  it('refuses an answer from a provider that does not answer the requirement, an empty one, a secret and a field the contract lacks', () => {
    const mesh = meshWithConsumer();
    mesh.register({ ...STORE, name: 'other-store' });
    mesh.assign('other-store', 'core');
    expect(mesh.refusal(answer({ bucket: 'x' }, { node: 'core', module: 'other-store' }))).toEqual([expect.objectContaining({ why: "lab1/app's store is answered by core/store, not by it" })]);
    expect(mesh.refusal(answer({}))).toEqual([expect.objectContaining({ what: 'values' })]);
    expect(mesh.refusal(answer({ bucket: '' }))).toEqual([expect.objectContaining({ why: expect.stringContaining('an empty value') })]);
    expect(mesh.refusal(answer({ key: 'AKIA…' }))).toEqual([expect.objectContaining({ why: expect.stringContaining('a secret never enters the log') })]);
    expect(mesh.refusal(answer({ region: 'eu' }))).toEqual([expect.objectContaining({ why: 'object-store has no field region' })]);
  });

  it('refuses ${bound:…} of a field the contract lacks, of a secret, and of a requirement no module answers', () => {
    const mesh = new MeshFixture();
    mesh.register(STORE);
    const problems = mesh.refusal({
      type: 'register-module',
      manifest: { ...app('app', ['app', '${bound:store.region}', '${bound:store.key}', '${bound:port.x}']), requires: [{ name: 'store', contract: 'object-store', provider: 'module' }, { name: 'port', contract: 'port', provider: 'host', port: 80 }] },
    });
    expect(problems.map((p) => p.why)).toEqual([
      expect.stringContaining('a field the object-store contract lacks'),
      expect.stringContaining("a secret field, and a provider's answer carries no secret"),
      expect.stringContaining('which no provider module answers'),
    ]);
  });
});

describe('a login derived for a consumer', () => {
  it('is at most 20 characters, the same on every derivation, and distinct for distinct consumers', () => {
    const long = derivedLogin('a-rather-long-node-name', 'a-rather-long-module-name');
    expect(long.length).toBeLessThanOrEqual(LOGIN_MAX);
    expect(derivedLogin('a-rather-long-node-name', 'a-rather-long-module-name')).toBe(long);
    expect(derivedLogin('a-rather-long-node-name', 'a-rather-long-module-nam')).not.toBe(long);
    expect(derivedLogin('lab1', 'app')).toBe('lab1-app');
  });

  it('reaches the consumer through its provider’s answers, derived again the same from the log', () => {
    const first = meshWithConsumer('app-with-a-long-name', 'node-with-long-name');
    const run = (mesh: MeshFixture) => {
      mesh.run({ type: 'answer-consumer', provider: { node: 'core', module: 'store' }, consumer: { node: 'node-with-long-name', module: 'app-with-a-long-name' }, requirement: 'store', values: { bucket: 'b' } });
      const composed = composeDeclaration(mesh.state, 'node-with-long-name');
      if (!composed.ok) throw new Error(JSON.stringify(composed.problems));
      const resource = composed.declaration.assignments[0]?.resources[0];
      return resource?.kind === 'process' ? resource.run[4] : undefined;
    };
    const login = run(first);
    expect(login).toBe(derivedLogin('node-with-long-name', 'app-with-a-long-name'));
    expect(login?.length).toBeLessThanOrEqual(LOGIN_MAX);
    expect(run(meshWithConsumer('app-with-a-long-name', 'node-with-long-name'))).toBe(login);
  });
});
