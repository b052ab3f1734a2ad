import { describe, expect, it } from '@jest/globals';
import { MeshFixture, stored } from '../../../tests/helpers/given.js';
import { composeDeclaration } from '../declarations/compose.js';
import type { Declaration, Resource } from '../declarations/declaration.js';
import type { Decision } from '../decision.js';
import { evolveMesh } from '../mesh/state.js';
import type { Report } from '../reports/report.js';
import { secretAggregate } from './events.js';
import { decideRotationMade, decideRotationPartiesGone, decideRotationRetired, deriveRotationSteps } from './rotation.js';
import { declaredVersions, rotationStep, secretNamed } from './state.js';

// A secret's rotation as its rules decide it: who takes part, which versions each party is
// declared at each step, what a report shows, and what the mesh refuses to rotate
// (docs/decisions.md, "Rotating a secret").

const LOGIN = 'test-login/beta-app';
const TOKEN = 'beta-app/token';

const logins = (rotation?: 'two-credentials') => ({
  name: 'logins',
  provides: [{ provision: 'test-login', perConsumerSecret: true, ...(rotation ? { rotation } : {}), fields: { user: { type: 'string' }, password: { type: 'string', secret: true } }, answers: { user: '${consumer.name}' } }],
  resources: { processes: [{ name: 'server', run: ['sleep', '600'] }] },
});

const meshWith = (twoCredentials = true): MeshFixture => {
  const mesh = new MeshFixture().node('alpha').node('beta');
  mesh.register({ name: 'test-vault', provides: [{ provision: 'secret' }], canHold: ['mesh-vault'], resources: {} });
  mesh.register(logins(twoCredentials ? 'two-credentials' : undefined));
  mesh.register({
    name: 'app',
    requires: [
      { name: 'db', contract: 'test-login', provider: 'module' },
      { name: 'token', contract: 'secret', provider: 'module', seat: 'mesh-vault' },
    ],
    resources: { processes: [{ name: 'server', run: ['sh', '-c', 'exec sleep 600', '${token.path}'] }] },
  });
  mesh.assign('test-vault', 'alpha', { hold: ['mesh-vault'] });
  mesh.assign('logins', 'alpha');
  mesh.assign('app', 'beta');
  // what the controller records once the vault made them
  for (const [secret, recipients] of [[LOGIN, ['alpha', 'beta']], [TOKEN, ['beta']]] as const) {
    evolveMesh(mesh.state, stored(secretAggregate(secret), { type: 'secret.made', data: { secret, purpose: 'p', recipients: [...recipients], version: 1 } }));
  }
  return mesh;
};

const apply = (mesh: MeshFixture, decision: Decision): void => {
  for (const event of decision.events) evolveMesh(mesh.state, stored(decision.aggregate, event));
};

const declared = (mesh: MeshFixture, node: string): Declaration => {
  const composed = composeDeclaration(mesh.state, node);
  if (!composed.ok) throw new Error(JSON.stringify(composed.problems));
  return { ...composed.declaration, sequence: 7, digest: 'sha256:x' } as Declaration;
};
const resource = (declaration: Declaration, key: string): Resource | undefined => declaration.assignments.flatMap((a) => a.resources).find((r) => r.key === key);
const versionsAt = (mesh: MeshFixture, node: string, key: string) => {
  const found = resource(declared(mesh, node), key);
  return found?.kind === 'secret' ? (found.versions ?? 'current') : undefined;
};

/** A report that every resource applied and every module runs. */
const allWell = (declaration: Declaration): Report => ({
  node: declaration.node,
  sequence: declaration.sequence,
  digest: declaration.digest,
  at: '2026-01-01T00:00:00.000Z',
  resources: declaration.assignments.flatMap((a) => a.resources.map((r) => ({ key: r.key, module: r.module, kind: r.kind, outcome: 'applied' as const, reason: null, restarts: null }))),
  running: declaration.assignments.map((a) => ({ module: a.module, definitionVersion: a.definitionVersion, artifact: a.artifact })),
  refusal: null,
});

describe('rotating a secret two parties hold', () => {
  it('declares both credentials to the applier, the new one to the reader only once the applier holds both, and the new one alone once retired', () => {
    const mesh = meshWith();
    const [started] = mesh.run({ type: 'rotate-secret', secret: LOGIN });
    expect(started).toEqual({ type: 'secret.rotation-started', data: { secret: LOGIN, from: 1, version: 2, parties: 'two', appliers: [{ node: 'alpha', module: 'logins' }], readers: [{ node: 'beta', module: 'app' }] } });
    const rotation = () => secretNamed(mesh.state.secrets, LOGIN)!.rotation!;
    expect(rotationStep(rotation())).toEqual({ step: 'making', waitsOn: 'vault' });
    expect(versionsAt(mesh, 'alpha', 'logins/consumer-beta-app')).toEqual([1]);
    expect(versionsAt(mesh, 'beta', 'app/secret-db-secret')).toEqual([1]);

    apply(mesh, decideRotationMade(mesh.state, LOGIN, 2));
    expect(rotationStep(rotation())).toEqual({ step: 'applying', waitsOn: [{ node: 'alpha', module: 'logins' }] });
    expect(versionsAt(mesh, 'alpha', 'logins/consumer-beta-app')).toEqual([1, 2]);
    expect(versionsAt(mesh, 'beta', 'app/secret-db-secret')).toEqual([1]);
    // the reader's report shows nothing yet: it runs with the old one
    expect(deriveRotationSteps(mesh.state, declared(mesh, 'beta'), allWell(declared(mesh, 'beta')))).toEqual([]);

    const [applied] = deriveRotationSteps(mesh.state, declared(mesh, 'alpha'), allWell(declared(mesh, 'alpha')));
    expect(applied?.events).toEqual([{ type: 'secret.rotation-applied', data: { secret: LOGIN, version: 2, node: 'alpha', module: 'logins', declarationSequence: 7 } }]);
    apply(mesh, applied!);
    expect(deriveRotationSteps(mesh.state, declared(mesh, 'alpha'), allWell(declared(mesh, 'alpha')))).toEqual([]);
    expect(rotationStep(rotation())).toEqual({ step: 'reading', waitsOn: [{ node: 'beta', module: 'app' }] });
    const reader = declared(mesh, 'beta');
    expect(versionsAt(mesh, 'beta', 'app/secret-db-secret')).toEqual([2]);
    // restarted on it, derived: the manifest never said so
    expect(resource(reader, 'app/server')).toMatchObject({ restartOn: ['app/secret-db-secret'] });
    // retiring waits for the reader
    expect(decideRotationRetired(mesh.state, LOGIN, 2).events).toEqual([]);

    // a reader whose module does not run confirms nothing
    expect(deriveRotationSteps(mesh.state, reader, { ...allWell(reader), running: [] })).toEqual([]);
    const [confirmed] = deriveRotationSteps(mesh.state, reader, allWell(reader));
    expect(confirmed?.events).toEqual([{ type: 'secret.rotation-confirmed', data: { secret: LOGIN, version: 2, node: 'beta', module: 'app', declarationSequence: 7 } }]);
    apply(mesh, confirmed!);
    expect(rotationStep(rotation())).toEqual({ step: 'retiring', waitsOn: 'vault' });
    apply(mesh, decideRotationRetired(mesh.state, LOGIN, 2));
    expect(secretNamed(mesh.state.secrets, LOGIN)).toMatchObject({ version: 2, rotation: null });
    expect(versionsAt(mesh, 'alpha', 'logins/consumer-beta-app')).toEqual([2]);
    expect(versionsAt(mesh, 'beta', 'app/secret-db-secret')).toEqual([2]);
    // retiring a credential removes no resource: the provider still applies the consumer's login
    expect(resource(declared(mesh, 'alpha'), 'logins/consumer-beta-app')).toBeDefined();
  });

  it('is abandoned back to the old version, and a rotation after it never reuses the abandoned one', () => {
    const mesh = meshWith();
    mesh.run({ type: 'rotate-secret', secret: LOGIN });
    apply(mesh, decideRotationMade(mesh.state, LOGIN, 2));
    apply(mesh, deriveRotationSteps(mesh.state, declared(mesh, 'alpha'), allWell(declared(mesh, 'alpha')))[0]!);
    expect(versionsAt(mesh, 'beta', 'app/secret-db-secret')).toEqual([2]);
    expect(mesh.run({ type: 'abandon-secret-rotation', secret: LOGIN, reason: 'not now' })).toEqual([{ type: 'secret.rotation-abandoned', data: { secret: LOGIN, version: 2, reason: 'not now' } }]);
    // the reader may hold the new value: it goes back first, and the provider keeps both until it has
    expect(versionsAt(mesh, 'beta', 'app/secret-db-secret')).toEqual([1]);
    expect(versionsAt(mesh, 'alpha', 'logins/consumer-beta-app')).toEqual([1, 2]);
    expect(rotationStep(secretNamed(mesh.state.secrets, LOGIN)!.rotation!)).toEqual({ step: 'unwinding', waitsOn: [{ node: 'beta', module: 'app' }] });
    expect(mesh.refusal({ type: 'rotate-secret', secret: LOGIN })[0]?.why).toBe(`a rotation of ${LOGIN} is under way (unwinding version 2, waiting on beta/app)`);
    // the provider's report shows nothing of the unwinding; the reader's, back on version 1, ends it
    expect(deriveRotationSteps(mesh.state, declared(mesh, 'alpha'), allWell(declared(mesh, 'alpha')))).toEqual([]);
    const back = deriveRotationSteps(mesh.state, declared(mesh, 'beta'), allWell(declared(mesh, 'beta')));
    expect(back.flatMap((d) => d.events)).toEqual([{ type: 'secret.rotation-reverted', data: { secret: LOGIN, version: 2, node: 'beta', module: 'app', declarationSequence: 7 } }]);
    apply(mesh, back[0]!);
    expect(secretNamed(mesh.state.secrets, LOGIN)).toMatchObject({ version: 1, rotation: null });
    expect(versionsAt(mesh, 'alpha', 'logins/consumer-beta-app')).toEqual([1]);
    expect(versionsAt(mesh, 'beta', 'app/secret-db-secret')).toEqual([1]);
    expect(mesh.run({ type: 'rotate-secret', secret: LOGIN })[0]).toMatchObject({ data: { from: 1, version: 3 } });
  });

  it('is abandoned at once before its readers were handed the new value, and a second abandon ends an unwinding at once', () => {
    const mesh = meshWith();
    mesh.run({ type: 'rotate-secret', secret: LOGIN });
    apply(mesh, decideRotationMade(mesh.state, LOGIN, 2));
    // the provider has not applied both: the reader was never handed version 2
    mesh.run({ type: 'abandon-secret-rotation', secret: LOGIN, reason: 'not now' });
    expect(secretNamed(mesh.state.secrets, LOGIN)?.rotation).toBeNull();
    expect(versionsAt(mesh, 'alpha', 'logins/consumer-beta-app')).toEqual([1]);
    mesh.run({ type: 'rotate-secret', secret: LOGIN });
    apply(mesh, decideRotationMade(mesh.state, LOGIN, 3));
    apply(mesh, deriveRotationSteps(mesh.state, declared(mesh, 'alpha'), allWell(declared(mesh, 'alpha')))[0]!);
    mesh.run({ type: 'abandon-secret-rotation', secret: LOGIN, reason: 'not now' });
    expect(rotationStep(secretNamed(mesh.state.secrets, LOGIN)!.rotation!).step).toBe('unwinding');
    // the reader is gone for good: an operator ends it, knowing it may be turned away
    mesh.run({ type: 'abandon-secret-rotation', secret: LOGIN, reason: 'beta is not coming back' });
    expect(secretNamed(mesh.state.secrets, LOGIN)?.rotation).toBeNull();
    expect(versionsAt(mesh, 'alpha', 'logins/consumer-beta-app')).toEqual([1]);
  });
});

describe('a rotation whose party is no longer assigned', () => {
  it('is given up, naming it; at once when its reader, handed the new value, is gone', () => {
    const mesh = meshWith();
    mesh.run({ type: 'rotate-secret', secret: LOGIN });
    apply(mesh, decideRotationMade(mesh.state, LOGIN, 2));
    apply(mesh, deriveRotationSteps(mesh.state, declared(mesh, 'alpha'), allWell(declared(mesh, 'alpha')))[0]!);
    expect(decideRotationPartiesGone(mesh.state, LOGIN, 2).events).toEqual([]);
    mesh.run({ type: 'unassign', node: 'beta', module: 'app' });
    const gone = decideRotationPartiesGone(mesh.state, LOGIN, 2);
    const abandoned = { type: 'secret.rotation-abandoned', data: { secret: LOGIN, version: 2, reason: 'beta/app is no longer assigned where the rotation found it' } };
    expect(gone.events).toEqual([abandoned, abandoned]);
    apply(mesh, gone);
    expect(secretNamed(mesh.state.secrets, LOGIN)).toMatchObject({ version: 1, rotation: null });
    // judged again, nothing is left to give up
    expect(decideRotationPartiesGone(mesh.state, LOGIN, 2).events).toEqual([]);
  });

  it('whose applier is gone before its readers were handed the new value, is given up once', () => {
    const mesh = meshWith();
    mesh.run({ type: 'rotate-secret', secret: TOKEN });
    mesh.run({ type: 'unassign', node: 'beta', module: 'app' });
    const gone = decideRotationPartiesGone(mesh.state, TOKEN, 2);
    expect(gone.events).toEqual([{ type: 'secret.rotation-abandoned', data: { secret: TOKEN, version: 2, reason: 'beta/app is no longer assigned where the rotation found it' } }]);
    apply(mesh, gone);
    expect(secretNamed(mesh.state.secrets, TOKEN)?.rotation).toBeNull();
  });
});

describe('rotating a secret one module holds', () => {
  it('stages the new value beside the current one, then makes it current', () => {
    const mesh = meshWith();
    expect(mesh.run({ type: 'rotate-secret', secret: TOKEN })[0]).toMatchObject({ data: { parties: 'one', appliers: [{ node: 'beta', module: 'app' }], readers: [] } });
    apply(mesh, decideRotationMade(mesh.state, TOKEN, 2));
    expect(versionsAt(mesh, 'beta', 'app/secret-token')).toEqual([1, 2]);
    apply(mesh, deriveRotationSteps(mesh.state, declared(mesh, 'beta'), allWell(declared(mesh, 'beta'))).find((d) => d.aggregate === secretAggregate(TOKEN))!);
    expect(rotationStep(secretNamed(mesh.state.secrets, TOKEN)!.rotation!)).toEqual({ step: 'retiring', waitsOn: 'vault' });
    apply(mesh, decideRotationRetired(mesh.state, TOKEN, 2));
    expect(versionsAt(mesh, 'beta', 'app/secret-token')).toEqual([2]);
  });
});

describe('what the mesh refuses to rotate', () => {
  it('a secret the log does not name is not found, naming that the foundation’s credentials are outside the vault', () => {
    const [problem] = meshWith().refusal({ type: 'rotate-secret', secret: 'postgres-controller' });
    expect(problem).toMatchObject({ what: 'postgres-controller', missing: 'secret', why: expect.stringContaining('outside the vault') });
  });

  it('one of the mesh’s own secrets, made at genesis, naming the keys it is sealed to', () => {
    const mesh = meshWith();
    evolveMesh(mesh.state, stored(secretAggregate('mesh/postgres-reader'), { type: 'secret.founded', data: { secret: 'mesh/postgres-reader', purpose: 'p', version: 1, sealedTo: [{ name: 'controller', key: 'k' }, { name: 'operator:ada', key: 'k2' }] } }));
    const [problem] = mesh.refusal({ type: 'rotate-secret', secret: 'mesh/postgres-reader' });
    expect(problem?.why).toBe("mesh/postgres-reader is the mesh's own (made at genesis, sealed to controller and operator:ada): the processes that log in with it read it from the files genesis wrote, and the mesh does not change it under them yet");
  });

  it('a per-consumer secret whose provider keeps one credential per consumer, naming the provider and the consumer', () => {
    const [problem] = meshWith(false).refusal({ type: 'rotate-secret', secret: LOGIN });
    expect(problem?.why).toBe(
      'its provider alpha/logins keeps one credential per consumer (its test-login does not say "rotation": "two-credentials"): changing it would leave beta/app without a working credential until it read the new one',
    );
  });

  it('a second rotation while one is under way, and abandoning when none is', () => {
    const mesh = meshWith();
    expect(mesh.refusal({ type: 'abandon-secret-rotation', secret: LOGIN, reason: 'x' })[0]?.why).toBe(`no rotation of ${LOGIN} is under way: it is at version 1`);
    mesh.run({ type: 'rotate-secret', secret: LOGIN });
    expect(mesh.refusal({ type: 'rotate-secret', secret: LOGIN })[0]?.why).toBe(`a rotation of ${LOGIN} is under way (making version 2, waiting on the vault)`);
  });

  it('a secret no assignment uses now', () => {
    const mesh = meshWith();
    mesh.run({ type: 'unassign', module: 'app', node: 'beta' });
    expect(mesh.refusal({ type: 'rotate-secret', secret: TOKEN })[0]?.why).toBe('no assignment uses it now: nobody holds it to apply or confirm a new value');
    expect(declaredVersions(secretNamed(mesh.state.secrets, TOKEN), { node: 'beta', module: 'app' })).toBeUndefined();
  });
});
