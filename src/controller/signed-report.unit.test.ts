import { describe, expect, it } from '@jest/globals';
import { pino } from 'pino';
import { identityFromSeed } from '../adapters/identity.js';
import { MeshFixture } from '../../tests/helpers/given.js';
import { signedMessage } from '../agent/report-signature.js';
import { tokenVerifier } from '../domain/nodes/enrolment.js';
import { SIGNATURE_HEADER } from '../domain/reports/signature.js';
import type { SpeakerEntry } from './speaker.js';
import { signedByItsNode, unsignedBecause } from './signed-report.js';

// A report or heartbeat counts only when its node signed it: the exact bytes, with the node's
// enrolled bus key, in the kind's own context.

const key = (n: number) => identityFromSeed(new Uint8Array(32).fill(n));
const alphaKey = key(6);
const betaKey = key(9);

const mesh = (): MeshFixture => {
  const fixture = new MeshFixture().node('alpha').node('beta').node('gamma');
  fixture.run({ type: 'issue-enrolment-token', tokenId: '00000000000000aa', verifier: tokenVerifier('x'), node: 'alpha', expiresAt: '2030-01-01T00:00:00.000Z' });
  fixture.run({ type: 'enrol-node', node: 'alpha', tokenId: '00000000000000aa', secret: 'x', publicKey: key(5).publicKey, busKey: alphaKey.publicKey, now: '2029-01-01T00:00:00.000Z' });
  fixture.run({ type: 'issue-enrolment-token', tokenId: '00000000000000bb', verifier: tokenVerifier('y'), node: 'beta', expiresAt: '2030-01-01T00:00:00.000Z' });
  fixture.run({ type: 'enrol-node', node: 'beta', tokenId: '00000000000000bb', secret: 'y', publicKey: key(8).publicKey, busKey: betaKey.publicKey, now: '2029-01-01T00:00:00.000Z' });
  return fixture;
};

const body = JSON.stringify({ node: 'alpha', sequence: 3, digest: 'sha256:00', at: '2029-01-01T00:00:00.000Z', resources: [], running: [], refusal: null });
const subject = 'mesh.control.alpha.report';

describe('a report counts only when its node signed it', () => {
  const state = mesh().state;

  it('passes the bytes alpha signed with its bus key', () => {
    const signed = signedMessage('report', alphaKey, body);
    expect(unsignedBecause('report', 'alpha', { subject, data: signed.body, headers: signed.headers }, state)).toBeUndefined();
  });

  it('fails when one byte of the body changed after signing', () => {
    const signed = signedMessage('report', alphaKey, body);
    const changed = Uint8Array.from(signed.body);
    changed[changed.length - 2] = (changed[changed.length - 2] ?? 0) ^ 1;
    expect(unsignedBecause('report', 'alpha', { subject, data: changed, headers: signed.headers }, state)).toMatch(/not node alpha's signature/);
  });

  it("fails when signed by another node's key, unsigned, or signed for the other kind", () => {
    const byBeta = signedMessage('report', betaKey, body);
    expect(unsignedBecause('report', 'alpha', { subject, data: byBeta.body, headers: byBeta.headers }, state)).toMatch(/not node alpha's signature/);
    expect(unsignedBecause('report', 'alpha', { subject, data: byBeta.body }, state)).toMatch(new RegExp(`no ${SIGNATURE_HEADER} header`));
    // a heartbeat's signature never passes for a report's, nor the other way round
    const asBeat = signedMessage('heartbeat', alphaKey, body);
    expect(unsignedBecause('report', 'alpha', { subject, data: asBeat.body, headers: asBeat.headers }, state)).toMatch(/not node alpha's signature/);
    expect(unsignedBecause('heartbeat', 'alpha', { subject, data: asBeat.body, headers: asBeat.headers }, state)).toBeUndefined();
  });

  it('fails for a node with no bus key enrolled, whatever key signed', () => {
    const signed = signedMessage('report', alphaKey, body);
    expect(unsignedBecause('report', 'gamma', { subject: 'mesh.control.gamma.report', data: signed.body, headers: signed.headers }, state)).toMatch(/no bus key/);
    expect(unsignedBecause('report', 'nobody', { subject: 'mesh.control.nobody.report', data: signed.body, headers: signed.headers }, state)).toMatch(/no bus key/);
  });

  it('counts a refusal as an impersonation, naming the subject and the node claimed', () => {
    const counted: [SpeakerEntry, string][] = [];
    const findings = { logger: pino({ level: 'silent' }), metrics: { impersonationRefused: (entry: SpeakerEntry, identity: string) => void counted.push([entry, identity]) } };
    const byBeta = signedMessage('heartbeat', betaKey, body);
    expect(signedByItsNode(findings, 'heartbeat', 'alpha', { subject: 'mesh.control.alpha.alive', data: byBeta.body, headers: byBeta.headers }, state)).toBe(false);
    expect(counted).toEqual([['heartbeat', 'whoever published on mesh.control.alpha.alive']]);
  });
});
