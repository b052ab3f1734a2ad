import { randomBytes } from 'node:crypto';
import { tokenVerifier } from '../domain/nodes/enrolment.js';
import { enrolmentIdentity } from './identity.js';

// A new enrolment token: shown once to whoever made it; the log keeps its id, a hash of its secret
// to verify the spend by, and the public half of the bus identity its secret derives — the one
// user the server knows the joining machine by until it has enrolled.

export interface NewEnrolmentToken {
  tokenId: string;
  /** `<tokenId>.<secret>`, as the agent is given it (by file or MESH_ENROL_TOKEN) */
  token: string;
  verifier: string;
  publicKey: string;
}

export const newEnrolmentToken = (): NewEnrolmentToken => {
  const tokenId = randomBytes(8).toString('hex');
  const secret = randomBytes(24).toString('base64url');
  return { tokenId, token: `${tokenId}.${secret}`, verifier: tokenVerifier(secret), publicKey: enrolmentIdentity(secret).publicKey };
};
