import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { meshHome } from '../../src/config.js';
import { enrol, hostKey, nodeIdentity } from '../../src/adapters/enrolment-client.js';
import { newKeyPair } from '../../src/adapters/sealing.js';
import { tokenVerifier } from '../../src/domain/nodes/enrolment.js';
import type { Refusal } from '../../src/domain/refusal.js';
import { uniqueName } from '../helpers/names.js';
import { openTestMesh, type TestMesh } from '../helpers/test-mesh.js';

describe('joining the mesh with an enrolment token', () => {
  let t: TestMesh;
  const dirs: string[] = [];
  const stateDir = (): string => {
    const dir = join(meshHome(), 'tmp', uniqueName('agent-'));
    dirs.push(dir);
    return dir;
  };
  const makeToken = async (options: { node?: string; expiresInMs?: number } = {}): Promise<string> => {
    const tokenId = randomBytes(8).toString('hex');
    const secret = randomBytes(24).toString('base64url');
    await t.run({ type: 'issue-enrolment-token', tokenId, verifier: tokenVerifier(secret), node: options.node ?? null, expiresAt: new Date(Date.now() + (options.expiresInMs ?? 3_600_000)).toISOString() });
    return `${tokenId}.${secret}`;
  };

  beforeEach(async () => {
    t = await openTestMesh();
    t.startEnrolment();
  });
  afterEach(async () => {
    await t.close();
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('spends the token once; the node’s own keys stay on the machine, its bus key enters the log, and no secret does', async () => {
    const token = await makeToken({ node: 'lab1' });
    const dir = stateDir();
    const enrolled = await enrol(t.nc, { node: 'lab1', token, stateDir: dir, prefix: t.names.prefix });
    expect(enrolled.node).toBe('lab1');

    const identity = nodeIdentity(dir);
    const bus = hostKey(dir);
    for (const file of ['identity.json', 'host.key', 'enrolment.json']) expect(statSync(join(dir, file)).mode & 0o777).toBe(0o600);

    const log = [];
    for await (const event of t.log.read()) log.push(event);
    const event = log.find((e) => e.type === 'node.enrolled');
    expect(event?.data).toEqual({ node: 'lab1', publicKey: identity.publicKey, busKey: bus.publicKey, tokenId: token.split('.')[0] });
    const everything = JSON.stringify(log);
    for (const secret of [token.split('.')[1] ?? '', identity.secretKey, bus.secretKey]) expect(everything).not.toContain(secret);
  });

  it('refuses a request without the host’s bus key, naming the field', async () => {
    const token = await makeToken();
    const request = { node: 'lab2', token, publicKey: newKeyPair().publicKey };
    const reply = await t.nc.request(`${t.names.prefix}.seat.mesh-controller.tool.enrol`, JSON.stringify(request), { timeout: 10_000 });
    const answer = JSON.parse(reply.string()) as { ok: false; refused: { what: string; why: string }[] };
    expect(answer.ok).toBe(false);
    expect(answer.refused[0]?.why).toContain('busKey');
  });

  it('refuses a spent, expired, wrong or misdirected token, naming why', async () => {
    const token = await makeToken();
    await enrol(t.nc, { node: 'lab3', token, stateDir: stateDir(), prefix: t.names.prefix });
    const refusal = (promise: Promise<unknown>) => promise.then(() => undefined, (error: Refusal) => error.problems?.[0]?.why ?? String(error));
    expect(await refusal(enrol(t.nc, { node: 'lab4', token, stateDir: stateDir(), prefix: t.names.prefix }))).toContain('already spent, by node lab3');
    expect(await refusal(enrol(t.nc, { node: 'lab5', token: await makeToken({ expiresInMs: -1000 }), stateDir: stateDir(), prefix: t.names.prefix }))).toContain('expired');
    expect(await refusal(enrol(t.nc, { node: 'lab6', token: `${token.split('.')[0]}.wrongsecret`, stateDir: stateDir(), prefix: t.names.prefix }))).toContain('not one the mesh made');
    expect(await refusal(enrol(t.nc, { node: 'lab7', token: await makeToken({ node: 'lab8' }), stateDir: stateDir(), prefix: t.names.prefix }))).toContain('made for node lab8');
  });

  it('lets exactly one of several machines racing with one token join', async () => {
    const token = await makeToken();
    const outcomes = await Promise.allSettled(['r1', 'r2', 'r3', 'r4'].map((node) => enrol(t.nc, { node, token, stateDir: stateDir(), prefix: t.names.prefix })));
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    const enrolled = [];
    for await (const event of t.log.read({ aggregate: 'node' })) if (event.type === 'node.enrolled') enrolled.push(event);
    expect(enrolled).toHaveLength(1);
  });

  it('answers a retry from the machine that spent the token, and only that machine', async () => {
    const token = await makeToken();
    const dir = stateDir();
    const first = await enrol(t.nc, { node: 'lab9', token, stateDir: dir, prefix: t.names.prefix });
    const again = await enrol(t.nc, { node: 'lab9', token, stateDir: dir, prefix: t.names.prefix });
    expect(again.node).toBe(first.node);
    expect(existsSync(join(dir, 'enrolment.json'))).toBe(true);
    expect(JSON.parse(readFileSync(join(dir, 'enrolment.json'), 'utf8'))).toEqual(again);
    const impostor = await enrol(t.nc, { node: 'lab9', token, stateDir: stateDir(), prefix: t.names.prefix }).catch((error: Refusal) => error.problems[0]?.why);
    expect(impostor).toContain('already spent, by node lab9');
  });
});
