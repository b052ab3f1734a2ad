import { createHash } from 'node:crypto';

// Small SQL helpers the engine shares: identifiers it builds itself, advisory-lock keys, and the
// SQLSTATE of a failure.

const IDENT = /^[a-z_][a-z0-9_]{0,62}$/;

/** A quoted identifier; only names the engine itself made (checked) ever reach SQL this way. */
export const ident = (name: string): string => {
  if (!IDENT.test(name)) throw new Error(`"${name}" is not a valid schema or table name (lower-case letters, digits, _; at most 63)`);
  return `"${name}"`;
};

/** The first key of every advisory lock the engine takes: "mesh" in ASCII, so they are easy to spot in pg_locks. */
export const LOCK_SPACE = 0x6d657368 | 0;

/** A stable 32-bit key for a name, for the second half of a two-key advisory lock. */
export const lockKey = (name: string): number => createHash('sha256').update(name).digest().readInt32BE(0);

/** PostgreSQL's five-character error code (42703: undefined column), when the failure came from the server. */
export const sqlstateOf = (error: unknown): string | undefined => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
};

/** Connection-level failures (class 08, 57P01 admin shutdown…) are the server's, not the projection's. */
export const isConnectionFailure = (error: unknown): boolean => {
  const code = sqlstateOf(error);
  if (code) return code.startsWith('08') || code.startsWith('57P');
  const message = (error as Error | null)?.message ?? '';
  return /Connection terminated|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|timeout exceeded when trying to connect|Client has encountered a connection error|not queryable/i.test(message);
};
