import { createHash } from 'node:crypto';

// A login the mesh derives for a consumer (`${consumer.login}` in a provider's answers): the
// consumer's identity `<node>-<module>` when it fits, else its first letters and a digest of the
// whole. At most 20 characters — the tightest backend's limit (issue 124 of the seeds: an object
// store's access key) — and made of the names alone, so every replay derives the same one.

export const LOGIN_MAX = 20;
const DIGEST_LENGTH = 8;

/** `text` when it fits in `max` characters, else its first letters, `-`, and 8 hex digits of its sha256. */
export const boundedName = (text: string, max: number): string => {
  if (text.length <= max) return text;
  const digest = createHash('sha256').update(text).digest('hex').slice(0, DIGEST_LENGTH);
  const head = text.slice(0, max - DIGEST_LENGTH - 1).replace(/-+$/, '');
  return `${head}-${digest}`;
};

/** The login of a consumer known by its identity `<node>-<module>`, as a provider finds it (a file named for it). */
export const loginOfIdentity = (identity: string): string => boundedName(identity, LOGIN_MAX);

export const derivedLogin = (node: string, module: string): string => loginOfIdentity(`${node}-${module}`);
