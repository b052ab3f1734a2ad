import { describe, expect, it } from '@jest/globals';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { StoredMeshEvent } from '../../src/domain/registry.js';
import { makeCertificate } from '../helpers/certificates.js';
import { operatorCliMesh } from '../helpers/cli.js';
import { minimalModule } from '../helpers/given.js';

// Through the CLI against the real servers: a module's source is a repository and a folder in it
// (issue 132 of the seeds), recorded by the event that registers it, and a source naming no folder
// is said, not refused; the mesh's trust root is set and refused by `mesh trust root`.

describe('provenance and the trust root, from the command line', () => {
  const { m, mesh, manifestFile, refused } = operatorCliMesh('provenance-');
  const last = async (aggregate: string): Promise<StoredMeshEvent | undefined> => {
    const found: StoredMeshEvent[] = [];
    for await (const event of m.t.log.read({ aggregate })) found.push(event);
    return found.at(-1);
  };

  it('--path records the folder the module lives in, in the event that registers it', async () => {
    const result = await mesh('module', 'register', manifestFile(minimalModule('mono-app')), '--source', 'https://example.org/mono.git', '--path', 'services/app');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('mono-app registered as definition version 1');
    expect(result.stdout).not.toContain('names no path');
    const registered = await last('module.mono-app');
    expect(registered?.data).toMatchObject({ manifest: { source: { url: 'https://example.org/mono.git', path: 'services/app', ref: 'main' } } });
    // Corrected only by an event: registering it again with the right folder is a new definition, the first kept in the log.
    const corrected = await mesh('module', 'register', manifestFile(minimalModule('mono-app')), '--source', 'https://example.org/mono.git', '--path', 'apps/app');
    expect(corrected.stdout).toContain('mono-app registered as definition version 2');
    const versions: StoredMeshEvent[] = [];
    for await (const event of m.t.log.read({ aggregate: 'module.mono-app' })) versions.push(event);
    expect(versions.map((e) => (e.data as { manifest: { source: unknown } }).manifest.source)).toEqual([
      { url: 'https://example.org/mono.git', path: 'services/app', ref: 'main' },
      { url: 'https://example.org/mono.git', path: 'apps/app', ref: 'main' },
    ]);
  });

  it('a source naming no folder registers, and says it is built from the repository\'s root', async () => {
    const result = await mesh('module', 'register', manifestFile(minimalModule('rooted-app')), '--source', 'https://example.org/mono.git');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('its source names no path, so it is built from the root of https://example.org/mono.git — if it lives in a folder of the repository, register it again with --path');
  });

  it('an entrypoint no resource runs is listed when the module registers (issue 117)', async () => {
    const manifest = minimalModule('ingest', {
      entrypoints: [
        { name: 'tools', command: ['ingest', 'tools'] },
        { name: 'provisioner', command: ['ingest', 'provision'] },
      ],
      resources: { processes: [{ name: 'tools', run: ['ingest', 'tools'] }] },
    });
    const result = await mesh('module', 'register', manifestFile(manifest));
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('entrypoints no resource runs: provisioner (ingest provision)');
    expect(result.stdout).not.toContain('tools (ingest tools)');
  });

  it('refuses --path with no source to be a folder of, appending nothing', async () => {
    expect(await refused(['module', 'register', manifestFile(minimalModule('lost-app')), '--path', 'services/app'], 2)).toContain('--path services/app is a folder of a repository, and the manifest names no source: give --source too');
  });

  it('mesh trust root sets the root of an authority, and refuses a certificate that is none, appending nothing', async () => {
    const leaf = join(m.dir, 'leaf.pem');
    writeFileSync(leaf, makeCertificate(join(m.dir, 'certs'), 'web.mesh', { ca: false }));
    expect(await refused(['trust', 'root', leaf], 3)).toMatch(/CN=web\.mesh is not a certificate authority/);
    expect(await refused(['trust', 'root', join(m.dir, 'nowhere.pem')], 2)).toContain('cannot read');
    const root = join(m.dir, 'root.pem');
    writeFileSync(root, makeCertificate(join(m.dir, 'certs'), 'mesh-root', { ca: true }));
    const result = await mesh('trust', 'root', root);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/the mesh trusts CN=mesh-root \(sha256:[0-9a-f]{64}\)/);
    expect((await last('trust.root'))?.type).toBe('trust.root-set');
  });
});
