import { describe, expect, it } from '@jest/globals';
import { WORKSTATION_HOSTS } from '../../tests/helpers/workstation-hosts.js';
import { findRegion, regionBlock, removeRegion, writeRegion } from './region-text.js';

const HOSTS = WORKSTATION_HOSTS;

const ok = <T extends { ok: boolean }>(edit: T): Extract<T, { ok: true }> => {
  if (!edit.ok) throw new Error(`not ok: ${JSON.stringify(edit)}`);
  return edit as Extract<T, { ok: true }>;
};

describe('a marked region of a shared file', () => {
  it('is added at the end or the start, and removing it gives the file back byte for byte', () => {
    const block = regionBlock('net/names', '10.1.0.1 alpha.internal\n10.1.0.2 beta.internal');
    expect(block).toBe('# BEGIN mesh net/names\n10.1.0.1 alpha.internal\n10.1.0.2 beta.internal\n# END mesh net/names\n');
    const atEnd = ok(writeRegion(HOSTS, 'net/names', block, 'end'));
    expect(atEnd.text).toBe(HOSTS + block);
    expect(atEnd.found).toBeNull();
    expect(ok(removeRegion(atEnd.text, 'net/names', null)).text).toBe(HOSTS);
    const atStart = ok(writeRegion(HOSTS, 'net/names', block, 'start'));
    expect(atStart.text).toBe(block + HOSTS);
    expect(ok(removeRegion(atStart.text, 'net/names', null)).text).toBe(HOSTS);
  });

  it('is rewritten where it stands, never moved, and the lines around it are untouched', () => {
    const first = ok(writeRegion(HOSTS, 'net/names', regionBlock('net/names', 'a'), 'start')).text;
    // Another tool rewrites its own block and appends a line after the mesh wrote.
    const edited = first.replace('127.0.0.1 docs.test\n', '127.0.0.1 docs.test blog.test\n') + '192.168.1.5 nas\n';
    const second = ok(writeRegion(edited, 'net/names', regionBlock('net/names', 'b'), 'end'));
    expect(second.text).toBe(edited.replace('# BEGIN mesh net/names\na\n', '# BEGIN mesh net/names\nb\n'));
    expect(second.found).toBe('# BEGIN mesh net/names\na\n# END mesh net/names\n');
  });

  it('gives back what stood under its markers before the mesh first wrote it', () => {
    const predecessor = `${HOSTS}# BEGIN mesh net/names\n10.9.9.9 old.internal\n# END mesh net/names\n`;
    const written = ok(writeRegion(predecessor, 'net/names', regionBlock('net/names', '10.1.0.1 alpha.internal'), 'end'));
    expect(written.found).toBe('# BEGIN mesh net/names\n10.9.9.9 old.internal\n# END mesh net/names\n');
    expect(ok(removeRegion(written.text, 'net/names', written.found)).text).toBe(predecessor);
  });

  it('keeps bytes that are not UTF-8 outside the region, and ends a last line without a newline before adding one', () => {
    const latin = Buffer.from([0x31, 0x20, 0xe9, 0x74, 0xe9]).toString('latin1');
    const written = ok(writeRegion(latin, 'm/r', regionBlock('m/r', 'café'), 'end')).text;
    expect(Buffer.from(written, 'latin1').subarray(0, 5)).toEqual(Buffer.from([0x31, 0x20, 0xe9, 0x74, 0xe9]));
    expect(Buffer.from(written, 'latin1').toString('utf8')).toContain('café');
    expect(ok(removeRegion(written, 'm/r', null)).text).toBe(`${latin}\n`);
  });

  it('is not touched when its markers cannot be told apart: a begin without an end, or two begins', () => {
    const broken = `${HOSTS}# BEGIN mesh net/names\n10.1.0.1 alpha\n`;
    expect(findRegion(broken, 'net/names')).toEqual({ ok: false, reason: '"# BEGIN mesh net/names" (line 10) has no "# END mesh net/names" after it' });
    const twice = `# BEGIN mesh m/r\n# END mesh m/r\n# BEGIN mesh m/r\n# END mesh m/r\n`;
    expect(writeRegion(twice, 'm/r', regionBlock('m/r', 'x'), 'end')).toEqual({ ok: false, reason: '"# BEGIN mesh m/r" appears 2 times' });
  });
});
