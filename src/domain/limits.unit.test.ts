import { describe, expect, it } from '@jest/globals';
import { MeshFixture } from '../../tests/helpers/given.js';
import { nameProblem, parseDuration, parseSequence, SEQ_MAX } from './limits.js';

const DAY = { ms: 86_400_000, written: '1d', why: 'a test bound' };

describe('the ranges values are checked against where they enter', () => {
  it('a log sequence is a whole number from 1 to 2^53 − 1', () => {
    expect(parseSequence('42')).toEqual({ seq: 42 });
    expect(parseSequence(String(SEQ_MAX))).toEqual({ seq: SEQ_MAX });
    expect(parseSequence('99999999999999999999')).toEqual({ why: expect.stringMatching(/beyond any log sequence \(at most 9007199254740991/) });
    expect(parseSequence('0')).toEqual({ why: 'log sequences begin at 1' });
    expect(parseSequence('-3')).toEqual({ why: expect.stringMatching(/not a log sequence/) });
    expect(parseSequence('1e3')).toEqual({ why: expect.stringMatching(/not a log sequence/) });
  });

  it('a duration is positive and at most its bound, which it names with the reason', () => {
    expect(parseDuration('2h', DAY)).toEqual({ ms: 7_200_000 });
    expect(parseDuration('1d', DAY)).toEqual({ ms: 86_400_000 });
    expect(parseDuration('0s', DAY)).toEqual({ why: expect.stringMatching(/no time at all/) });
    expect(parseDuration('99999999999999h', DAY)).toEqual({ why: expect.stringMatching(/longer than 1d, the most it may be: a test bound/) });
    expect(parseDuration('1.5h', DAY)).toEqual({ why: expect.stringMatching(/not a duration/) });
  });

  it('a module, node or seat name is at most 31 characters, saying why', () => {
    expect(nameProblem('node', 'lab1', 'node')).toBeUndefined();
    expect(nameProblem('node', 'n'.repeat(32), 'node')?.why).toMatch(/at most 31 characters.*<node>-<module>/);
    expect(nameProblem('seat', 'Bad_Name', 'seat')?.why).toMatch(/not a seat name/);
  });

  it('the deciders hold node and seat names to it', () => {
    const mesh = new MeshFixture();
    expect(mesh.refusal({ type: 'add-node', node: 'n'.repeat(300) })[0]?.why).toMatch(/at most 31 characters, and "n+…" has 300/);
    expect(mesh.refusal({ type: 'issue-enrolment-token', tokenId: '0123456789abcdef', verifier: 'f'.repeat(64), node: 'n'.repeat(32), expiresAt: '2030-01-01T00:00:00Z' })[0]).toMatchObject({ what: '--node' });
    expect(mesh.refusal({ type: 'rename-seat', seat: 'mesh-git', to: `mesh-${'g'.repeat(40)}` })[0]?.why).toMatch(/at most 31/);
    expect(mesh.refusal({ type: 'add-node', node: 'lab1', address: `${'a'.repeat(254)}` })[0]).toMatchObject({ what: '--address' });
  });
});
