import { z } from 'zod';
import { canonicalJson } from '../canonical.js';

// A console session is opened by an operator signing a nonce the controller gave, with the same
// key their commands are signed with. What is signed starts with its own context, and a NUL, so
// these bytes are never JSON and never a command's signed bytes: a session's signature can never
// be replayed as a command, nor a command's as a session (docs/decisions.md, "Reading needs a reason").

export const CONSOLE_SESSION_CONTEXT = 'mesh console session v1';

/** A nonce as the controller gives it: 32 random bytes, base64url. */
export const consoleNonceSchema = z.string().regex(/^[A-Za-z0-9_-]{43}$/, 'a nonce is the 43 characters /api/session/challenge gave');

export const consoleChallengeSchema = z.strictObject({
  nonce: consoleNonceSchema,
  /** what the signature is over starts with this */
  context: z.literal(CONSOLE_SESSION_CONTEXT),
  /** ISO 8601: the nonce is refused after it */
  expiresAt: z.string(),
});

export type ConsoleChallenge = z.infer<typeof consoleChallengeSchema>;

/** The body of `POST /api/session`. */
export const consoleSessionRequestSchema = z.strictObject({
  operator: z.string().min(1).max(63),
  nonce: consoleNonceSchema,
  /** base64 ed25519 signature over consoleSessionBytes */
  signature: z.string().min(1).max(200),
});

export type ConsoleSessionRequest = z.infer<typeof consoleSessionRequestSchema>;

export const consoleSessionAnswerSchema = z.strictObject({
  ok: z.literal(true),
  operator: z.string(),
  /** for an API client: `Authorization: Bearer <token>` */
  token: z.string(),
  /** ISO 8601: the session ends then */
  expiresAt: z.string(),
  /** a path a browser opens once (within a minute) to hold the session as a cookie */
  open: z.string(),
});

export type ConsoleSessionAnswer = z.infer<typeof consoleSessionAnswerSchema>;

/** Exactly what an operator signs to open a session. */
export const consoleSessionBytes = (request: Pick<ConsoleSessionRequest, 'operator' | 'nonce'>): Uint8Array =>
  new TextEncoder().encode(`${CONSOLE_SESSION_CONTEXT}\0${canonicalJson({ nonce: request.nonce, operator: request.operator })}`);
