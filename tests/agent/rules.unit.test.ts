import { describe, expect, it } from '@jest/globals';
import { judgeDeclaration } from '../../src/agent/acceptance.js';
import type { ResourceRecord } from '../../src/agent/records.js';
import { matchRecords, resourceDigest, resourceIdentity, type Desired } from '../../src/agent/resource-identity.js';
import type { Declaration, Resource } from '../../src/domain/declarations/declaration.js';
import { sameReport } from '../../src/agent/report-of.js';
import { assignment, directoryResource, fileResource, processResource } from './harness.js';

const declaration = (sequence: number, digest = `sha256:${String(sequence).padStart(64, '0')}`, node = 'n1'): Declaration => ({
  node,
  sequence,
  digest,
  derivedFromSeq: 1,
  assignments: [assignment('web', [processResource('web', 'server', ['sleep', '1'])])],
});

describe('which declaration a node accepts', () => {
  it('accepts a first one, a higher one, and the same one again (as no change)', () => {
    expect(judgeDeclaration('n1', declaration(1), undefined)).toMatchObject({ accepted: true, changed: true });
    expect(judgeDeclaration('n1', declaration(2), declaration(1))).toMatchObject({ accepted: true, changed: true });
    expect(judgeDeclaration('n1', declaration(2), declaration(2))).toMatchObject({ accepted: true, changed: false });
  });

  it('refuses a lower sequence, a changed declaration under the same sequence, another node’s, and a malformed one', () => {
    expect(judgeDeclaration('n1', declaration(3), declaration(5))).toMatchObject({ accepted: false, sequence: 3, refusal: 'sequence 3 is lower than 5, the sequence this node has applied' });
    expect(judgeDeclaration('n1', declaration(5, `sha256:${'f'.repeat(64)}`), declaration(5))).toMatchObject({ accepted: false, refusal: expect.stringMatching(/needs a higher sequence/) });
    expect(judgeDeclaration('n1', declaration(6, undefined, 'n2'), declaration(5))).toMatchObject({ accepted: false, refusal: 'the declaration is for node n2, and this is node n1' });
    expect(judgeDeclaration('n1', { ...declaration(7), sequence: -1 }, undefined)).toMatchObject({ accepted: false, refusal: expect.stringMatching(/^not a valid declaration: sequence: /) });
    expect(judgeDeclaration('n1', undefined, undefined)).toMatchObject({ accepted: false, sequence: 0, digest: '' });
  });
});

const desire = (resources: Resource[]): Desired[] => {
  const digests = new Map(resources.map((r) => [r.key, resourceDigest(r)]));
  return resources.map((resource) => ({ resource, digest: resourceDigest(resource), identity: resourceIdentity(resource, digests) }));
};

const recordOf = (d: Desired, id: string): ResourceRecord =>
  ({ id, key: d.resource.key, module: d.resource.module, kind: d.resource.kind, identity: d.identity, digest: d.digest }) as ResourceRecord;

describe('which record a declared resource continues', () => {
  const server = processResource('web', 'server', ['sleep', '300'], { env: { PORT: '80' } });

  it('follows a renamed key when nothing else changed', () => {
    const [before] = desire([server]);
    const matching = matchRecords(desire([{ ...server, key: 'web/daemon' }]), [recordOf(before as Desired, 'r1')]);
    expect(matching.records.get('web/daemon')?.id).toBe('r1');
    expect(matching.leftovers).toEqual([]);
  });

  it('replaces a process when any field changes, including what it restarts on', () => {
    const [before] = desire([server]);
    for (const changed of [{ ...server, env: { PORT: '81' } }, { ...server, user: 'nobody' }, { ...server, run: ['sleep', '301'] }, { ...server, after: ['web/prepare'] }]) {
      const matching = matchRecords(desire([changed]), [recordOf(before as Desired, 'r1')]);
      expect(matching.records.size).toBe(0);
      expect(matching.leftovers.map((r) => r.id)).toEqual(['r1']);
    }
    const config = fileResource('web', 'config', '/etc/web.conf', 'a');
    const watching = { ...server, restartOn: ['web/config'] };
    const records = desire([config, watching]).map((d, i) => recordOf(d, `r${i}`));
    const matching = matchRecords(desire([{ ...config, content: 'b' }, watching]), records);
    expect(matching.records.get('web/config')?.id).toBe('r0');
    expect(matching.leftovers.map((r) => r.id)).toEqual(['r1']);
  });

  it('keeps a path across a rename and a change of mode, and refuses one path declared twice', () => {
    const [data] = desire([directoryResource('web', 'data', '/srv/web')]);
    const moved = matchRecords(desire([directoryResource('web', 'store', '/srv/web', '0700')]), [recordOf(data as Desired, 'r1')]);
    expect(moved.records.get('web/store')?.id).toBe('r1');
    const twice = matchRecords(desire([directoryResource('web', 'data', '/srv/web'), directoryResource('api', 'data', '/srv/web')]), []);
    expect(twice.duplicates).toEqual(new Map([['api/data', 'web/data']]));
  });

  it('prefers the same key among records of the same identity: two identical workers stay two', () => {
    const workers = desire([processResource('jobs', 'a', ['sleep', '300']), processResource('jobs', 'b', ['sleep', '300'])]);
    // Same identity except the key: both are in the declaration, so neither is a rename.
    expect(workers[0]?.identity).toBe(workers[1]?.identity);
    const matching = matchRecords(workers, [recordOf(workers[1] as Desired, 'rb'), recordOf(workers[0] as Desired, 'ra')]);
    expect(matching.records.get('jobs/a')?.id).toBe('ra');
    expect(matching.records.get('jobs/b')?.id).toBe('rb');
  });

  it('digests and identities do not drift: records written by an earlier agent keep matching', () => {
    // Pinned values: a change to how they are computed would replace every process on every node.
    const conf = fileResource('web', 'conf', '/srv/web.conf', 'port=8080\n');
    const web = processResource('web', 'server', ['sh', '-c', 'exec web'], { env: { PORT: '8080' }, restartOn: ['web/conf'] });
    const digests = new Map([conf, web].map((r) => [r.key, resourceDigest(r)]));
    expect(digests.get('web/conf')).toBe('sha256:5c8fc541bbfc4cd3e3d50b57e551423538fb943312960ebebeaec6368f4caa6a');
    expect(digests.get('web/server')).toBe('sha256:b1f67b7298115e1e4f01d8024003d103c2f00d6c20e54c2259199af7f4bcc523');
    expect(resourceIdentity(web, digests)).toBe('sha256:981b57b046bf2682e7f7f3957844b6e52e63329dd64dac2c30dc1c88affa2785');
  });
});

describe('when a report says something new', () => {
  it('not for a new time or another restart of a crash loop; yes for a changed outcome', () => {
    const base = { node: 'n', sequence: 1, digest: 'd', at: 't1', running: [], refusal: null };
    const looping = (restarts: number) => ({ key: 'a/b', module: 'a', kind: 'process', outcome: 'crash-looping' as const, reason: 'exited with status 1', restarts });
    expect(sameReport({ ...base, resources: [looping(3)] }, { ...base, at: 't2', resources: [looping(9)] })).toBe(true);
    expect(sameReport({ ...base, resources: [looping(3)] }, { ...base, resources: [{ ...looping(0), outcome: 'applied', reason: null, restarts: null }] })).toBe(false);
  });
});
