import { createHash } from 'node:crypto';

// A login the mesh derives for a consumer (`${consumer.login}` in a provider's answers): the
// consumer's identity `<node>-<module>` when it fits, else its first letters and a digest of the
// whole. At most 20 characters — the tightest backend's limit (issue 124 of the seeds: an object
// store's access key) — and made of the names alone, so every replay derives the same one.

export const LOGIN_MAX = 20;
const DIGEST_LENGTH = 8;

export const derivedLogin = (node: string, module: string): string => {
  const identity = `${node}-${module}`;
  if (identity.length <= LOGIN_MAX) return identity;
  const digest = createHash('sha256').update(identity).digest('hex').slice(0, DIGEST_LENGTH);
  const head = identity.slice(0, LOGIN_MAX - DIGEST_LENGTH - 1).replace(/-+$/, '');
  return `${head}-${digest}`;
};
