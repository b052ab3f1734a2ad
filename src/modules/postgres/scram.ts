import { createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto';

// A login's password is given to PostgreSQL as its SCRAM-SHA-256 verifier (RFC 5802, RFC 7677),
// computed here: the server stores the same thing either way, and the password itself then never
// appears in a statement — not in the server's log, not in pg_stat_activity. Checking a stored
// verifier against a password is how the provider knows a login already has it (a pass that
// changes nothing writes nothing).

const ITERATIONS = 4096;

const hmac = (key: Buffer, text: string): Buffer => createHmac('sha256', key).update(text).digest();

const keys = (password: string, salt: Buffer, iterations: number): { storedKey: Buffer; serverKey: Buffer } => {
  // The vault's values are base64url, which SASLprep leaves as they are.
  const salted = pbkdf2Sync(password.normalize('NFKC'), salt, iterations, 32, 'sha256');
  return { storedKey: createHash('sha256').update(hmac(salted, 'Client Key')).digest(), serverKey: hmac(salted, 'Server Key') };
};

/** `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`, as pg_authid.rolpassword holds it. */
export const scramVerifier = (password: string, salt: Buffer = randomBytes(16), iterations = ITERATIONS): string => {
  const { storedKey, serverKey } = keys(password, salt, iterations);
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
};

/** Whether a stored verifier is the one of this password (anything else, an md5 hash or none, is not). */
export const verifies = (password: string, verifier: string | null): boolean => {
  const match = /^SCRAM-SHA-256\$(\d+):([^$]+)\$([^:]+):(.+)$/.exec(verifier ?? '');
  if (!match) return false;
  const [, iterations = '', salt = '', stored = '', server = ''] = match;
  const { storedKey, serverKey } = keys(password, Buffer.from(salt, 'base64'), Number(iterations));
  const same = (a: Buffer, b: Buffer) => a.length === b.length && timingSafeEqual(a, b);
  return same(storedKey, Buffer.from(stored, 'base64')) && same(serverKey, Buffer.from(server, 'base64'));
};
