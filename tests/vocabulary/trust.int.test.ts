import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TrustStore } from '../../src/agent/drivers/trust-anchor.js';
import { makeCertificate } from '../helpers/certificates.js';
import { openAgentMesh, type AgentMesh } from '../helpers/agent-mesh.js';
import { waitFor } from '../helpers/test-mesh.js';

// The mesh's trust root reaches exactly the machines of the private network (issue 129 of the
// seeds). Real agents place it in a trust directory of the test's own and refresh a bundle from
// it, as update-ca-certificates does; a rotation sends each of those machines one new declaration
// and no other machine any; a machine that leaves the private network no longer trusts it.

describe('the mesh trust root, from the log to the machines of the private network', () => {
  let m: AgentMesh;
  const roots: string[] = [];
  let leaf: string;
  const storeOf = (node: string): TrustStore => {
    const dir = join(m.root, 'machines', node, 'anchors');
    // The refresh rebuilds the machine's bundle from every anchor there, as the real command does.
    return { dir, refresh: ['sh', '-c', 'cat "$0"/*.crt > "$1" 2>/dev/null || : > "$1"', dir, join(m.root, 'machines', node, 'bundle.pem')] };
  };
  const anchorsOf = (node: string): string[] => readdirSync(storeOf(node).dir);
  const bundleOf = (node: string): string => {
    const file = join(m.root, 'machines', node, 'bundle.pem');
    return existsSync(file) ? readFileSync(file, 'utf8') : '';
  };
  const sequenceOf = async (node: string): Promise<number> => (await m.t.declarationOf(node))?.sequence ?? 0;
  const anchorFile = (node: string): string => join(storeOf(node).dir, 'mesh-private-network-mesh-root.crt');

  beforeAll(async () => {
    m = await openAgentMesh();
    const certs = join(m.root, 'certs');
    roots.push(makeCertificate(certs, 'mesh-root-1', { ca: true }), makeCertificate(certs, 'mesh-root-2', { ca: true }));
    leaf = makeCertificate(certs, 'web.mesh', { ca: false });
    await m.t.run({ type: 'register-module', manifest: { name: 'private-network', resources: { trustAnchors: [{ name: 'mesh-root' }] } } });
    await m.t.run({ type: 'register-module', manifest: { name: 'idle', resources: { processes: [{ name: 'idle', run: ['sleep', '600'] }] } } });
    for (const node of ['alpha', 'beta', 'gamma']) {
      await m.addNode(node);
      mkdirSync(storeOf(node).dir, { recursive: true });
      await m.startAgent(node, { trustStore: storeOf(node) });
    }
    await waitFor('every agent saying it places trust anchors', async () => new Set((await m.events('fact')).filter((e) => e.type === 'fact.capabilities').map((e) => (e.data as { node: string }).node)).size === 3);
  });
  afterAll(async () => m?.close());

  it('refuses what is not one certificate of an authority, appending nothing', async () => {
    const head = await m.quietHead();
    await expect(m.t.run({ type: 'set-trust-root', certificate: leaf })).rejects.toThrow(/CN=web\.mesh is not a certificate authority \(its basic constraints say CA:FALSE\)/);
    await expect(m.t.run({ type: 'set-trust-root', certificate: 'hello' })).rejects.toThrow(/it is not one PEM certificate block/);
    await expect(m.t.run({ type: 'set-trust-root', certificate: `${roots[0]}${roots[1]}` })).rejects.toThrow(/it is not one PEM certificate block \(a private key, or a bundle of several, is refused\)/);
    expect(await m.logHead()).toBe(head);
  });

  it('withholds the private network until the mesh has a root to trust, saying so', async () => {
    await m.assign('private-network', 'alpha');
    const refusal = await m.eventWhere('node', 'declaration.refused', (e) => (e.data as { node: string }).node === 'alpha');
    expect(refusal.data).toMatchObject({ unresolved: [{ what: 'alpha/private-network resources.trustAnchors.mesh-root', why: 'the mesh has no root certificate to trust yet', remedy: expect.stringContaining('mesh trust root') }] });
    expect(anchorsOf('alpha')).toEqual([]);
  }, 60_000);

  it('places the root on exactly the machines of the private network, and refreshes their bundles', async () => {
    await m.assign('private-network', 'beta');
    await m.assign('idle', 'gamma');
    await m.t.run({ type: 'set-trust-root', certificate: roots[0] as string });
    for (const node of ['alpha', 'beta']) await waitFor(`the root on ${node}`, async () => existsSync(anchorFile(node)) && bundleOf(node) === roots[0]);
    expect(readFileSync(anchorFile('alpha'), 'utf8')).toBe(roots[0]);
    await m.eventWhere('fact', 'fact.applied', (e) => (e.data as { module: string; node: string }).module === 'idle');
    expect(anchorsOf('gamma')).toEqual([]);
    expect(bundleOf('gamma')).toBe('');
  }, 60_000);

  it('a rotation sends each of those machines one new declaration, and no other machine any', async () => {
    const before = { alpha: await sequenceOf('alpha'), beta: await sequenceOf('beta'), gamma: await sequenceOf('gamma') };
    const head = await m.quietHead();
    expect(await m.t.run({ type: 'set-trust-root', certificate: roots[0] as string })).toMatchObject({ summary: expect.stringContaining('the mesh already trusts CN=mesh-root-1') });
    expect(await m.logHead()).toBe(head);
    await m.t.run({ type: 'set-trust-root', certificate: roots[1] as string });
    for (const node of ['alpha', 'beta']) await waitFor(`the rotated root on ${node}`, async () => bundleOf(node) === roots[1]);
    expect(readFileSync(anchorFile('beta'), 'utf8')).toBe(roots[1]);
    expect({ alpha: await sequenceOf('alpha'), beta: await sequenceOf('beta'), gamma: await sequenceOf('gamma') }).toEqual({ alpha: before.alpha + 1, beta: before.beta + 1, gamma: before.gamma });
  }, 60_000);

  it('a machine that leaves the private network no longer trusts the mesh', async () => {
    await m.t.run({ type: 'unassign', module: 'private-network', node: 'beta' });
    await waitFor('the anchor gone from beta', async () => !existsSync(anchorFile('beta')) && bundleOf('beta') === '');
    expect(anchorsOf('beta')).toEqual([]);
    expect(readFileSync(anchorFile('alpha'), 'utf8')).toBe(roots[1]);
  }, 60_000);
});
