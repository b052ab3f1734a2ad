import { X509Certificate } from 'node:crypto';
import { z } from 'zod';
import type { Decision } from '../decision.js';
import type { MeshState } from '../mesh/state.js';
import { refuseIfAny, type Problem } from '../refusal.js';
import { TRUST_AGGREGATE, TrustRootSet } from './events.js';
import { currentTrustRoot } from './state.js';

// Setting the mesh's trust root: a certificate of an authority (a CA), given as PEM. Reading it
// is a computation on the command's bytes, not I/O, so it stays in the decider; the clock is not
// read here — a certificate already expired is for the operator to see in the summary.

export const setTrustRootSchema = z.strictObject({ type: z.literal('set-trust-root'), certificate: z.string() });
export type SetTrustRoot = z.infer<typeof setTrustRootSchema>;

const PEM = /^-----BEGIN CERTIFICATE-----\r?\n[A-Za-z0-9+/=\r\n]+-----END CERTIFICATE-----\r?\n?$/;

const read = (pem: string): { certificate: X509Certificate } | { problem: Problem } => {
  const trimmed = `${pem.trim()}\n`;
  const remedy = 'give the root certificate of the mesh\'s authority as one PEM block (-----BEGIN CERTIFICATE----- …)';
  if (!PEM.test(trimmed)) return { problem: { what: 'certificate', why: 'it is not one PEM certificate block (a private key, or a bundle of several, is refused)', remedy } };
  try {
    return { certificate: new X509Certificate(trimmed) };
  } catch (error) {
    return { problem: { what: 'certificate', why: `it does not read as an X.509 certificate: ${(error as Error).message}`, remedy } };
  }
};

export const decideSetTrustRoot = (command: SetTrustRoot, state: MeshState): Decision => {
  const problems: Problem[] = [];
  const parsed = read(command.certificate);
  if ('problem' in parsed) problems.push(parsed.problem);
  else if (!parsed.certificate.ca) {
    problems.push({ what: 'certificate', why: `${parsed.certificate.subject.replace(/\n/g, ', ')} is not a certificate authority (its basic constraints say CA:FALSE): trusting it would trust one name, not the mesh's authority`, remedy: 'give the root of the authority that issues the mesh\'s certificates' });
  }
  refuseIfAny('setting the mesh\'s trust root', problems);
  if ('problem' in parsed) throw new Error('unreachable: refused above');
  const certificate = parsed.certificate;
  const fingerprint = `sha256:${certificate.fingerprint256.replace(/:/g, '').toLowerCase()}`;
  const subject = certificate.subject.replace(/\n/g, ', ');
  if (currentTrustRoot(state.trust)?.fingerprint === fingerprint) return { aggregate: TRUST_AGGREGATE, events: [], summary: `the mesh already trusts ${subject} (${fingerprint})` };
  return {
    aggregate: TRUST_AGGREGATE,
    events: [{ type: TrustRootSet.type, data: { certificate: certificate.toString(), fingerprint, subject, validTo: new Date(certificate.validTo).toISOString() } }],
    summary: `${currentTrustRoot(state.trust) ? 'the mesh\'s trust root rotated to' : 'the mesh trusts'} ${subject} (${fingerprint}), valid to ${new Date(certificate.validTo).toISOString()}`,
  };
};
