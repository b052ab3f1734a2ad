import { randomBytes } from 'node:crypto';
import { verifyBytes } from '../../adapters/identity.js';
import { CONSOLE_SESSION_CONTEXT, consoleSessionBytes, type ConsoleChallenge, type ConsoleSessionRequest } from '../../domain/operators/console-session.js';

// The console's sessions (docs/decisions.md, "Reading needs a reason"): a nonce given to anyone
// who asks, used once, for a minute; a session opened only by an operator's signature over it,
// checked against the key the controller's view holds for that operator now, for a bounded life;
// and a one-time link a browser opens to hold the session as a cookie. All of it is this
// process's memory: a restarted controller forgets its sessions, and the operator opens another.

/** The operator's key and standing, as the controller's view of the log holds them now. */
export type OperatorLookup = (operator: string) => { publicKey: string; revoked: boolean } | undefined;

export interface SessionSettings {
  /** how long a session lasts once opened */
  sessionTtlMs: number;
  /** how long a nonce may wait to be signed */
  nonceTtlMs: number;
  /** how long the one-time link may wait to be opened */
  linkTtlMs: number;
  /** nonces waiting at once, from one address and in all */
  maxNoncesPerClient: number;
  maxNonces: number;
  /** sessions held at once: past it, the oldest ends */
  maxSessions: number;
}

export const DEFAULT_SESSION_SETTINGS: SessionSettings = {
  sessionTtlMs: 8 * 3_600_000,
  nonceTtlMs: 60_000,
  linkTtlMs: 60_000,
  maxNoncesPerClient: 16,
  maxNonces: 1_024,
  maxSessions: 4_096,
};

/** A refusal as the API says it: what, why, and what would answer it. */
export interface SessionRefusal {
  ok: false;
  why: string;
  remedy: string;
}

export interface OpenedSession {
  ok: true;
  operator: string;
  token: string;
  link: string;
  expiresAt: Date;
}

const OPEN_REMEDY = 'run `mesh console open` (it signs a fresh nonce with your operator key)';

const randomToken = (): string => randomBytes(32).toString('base64url');

/** Entries of a map in the order they were added, so the front is the oldest: drop the expired from it. */
const dropExpired = <V extends { expires: number }>(map: Map<string, V>, now: number, onDrop?: (value: V) => void): void => {
  for (const [key, value] of map) {
    if (value.expires > now) return;
    map.delete(key);
    onDrop?.(value);
  }
};

export class ConsoleSessions {
  private readonly settings: SessionSettings;
  private readonly nonces = new Map<string, { address: string; expires: number }>();
  private readonly noncesByClient = new Map<string, number>();
  private readonly sessions = new Map<string, { operator: string; expires: number }>();
  private readonly links = new Map<string, { token: string; expires: number }>();
  private readonly now: () => number;
  private readonly newToken: () => string;

  constructor(
    private readonly operators: OperatorLookup,
    options: { settings?: Partial<SessionSettings>; now?: () => number; newToken?: () => string } = {},
  ) {
    this.settings = { ...DEFAULT_SESSION_SETTINGS, ...options.settings };
    this.now = options.now ?? Date.now;
    this.newToken = options.newToken ?? randomToken;
  }

  /** A nonce for `address` to sign, or why there is none now. */
  challenge(address: string): ConsoleChallenge | SessionRefusal {
    const now = this.now();
    this.sweep(now);
    const waiting = this.noncesByClient.get(address) ?? 0;
    if (waiting >= this.settings.maxNoncesPerClient) return { ok: false, why: `${waiting} nonces given to ${address} are waiting to be signed, as many as one address may hold`, remedy: 'sign one, or wait a minute for them to expire' };
    if (this.nonces.size >= this.settings.maxNonces) return { ok: false, why: `${this.nonces.size} nonces are waiting to be signed, as many as this controller holds`, remedy: 'wait a minute for them to expire' };
    const nonce = this.newToken();
    const expires = now + this.settings.nonceTtlMs;
    this.nonces.set(nonce, { address, expires });
    this.noncesByClient.set(address, waiting + 1);
    return { nonce, context: CONSOLE_SESSION_CONTEXT, expiresAt: new Date(expires).toISOString() };
  }

  /** A session for the operator whose signature over a waiting nonce verifies; the nonce is spent by any attempt. */
  open(request: ConsoleSessionRequest): OpenedSession | SessionRefusal {
    const now = this.now();
    this.sweep(now);
    const waiting = this.nonces.get(request.nonce);
    if (!waiting) return { ok: false, why: 'the nonce is not one this controller gave, or it was used already, or it expired (a nonce is good once, for a minute)', remedy: OPEN_REMEDY };
    this.spend(request.nonce, waiting.address);
    const operator = this.operators(request.operator);
    if (!operator) return { ok: false, why: `no operator ${request.operator} is known to the mesh`, remedy: 'sign with the key of an operator the mesh knows (`mesh operator list`)' };
    if (operator.revoked) return { ok: false, why: `operator ${request.operator} was revoked`, remedy: 'a revoked operator reads nothing; ask another operator' };
    if (!verifyBytes(operator.publicKey, consoleSessionBytes(request), request.signature)) {
      return { ok: false, why: `the signature does not verify against operator ${request.operator}'s key as the mesh holds it`, remedy: `sign with ${request.operator}'s own key (MESH_OPERATOR_KEY)` };
    }
    while (this.sessions.size >= this.settings.maxSessions) {
      const oldest = this.sessions.keys().next().value;
      if (oldest === undefined) break;
      this.sessions.delete(oldest);
    }
    const token = this.newToken();
    const expires = now + this.settings.sessionTtlMs;
    this.sessions.set(token, { operator: request.operator, expires });
    const link = this.newToken();
    this.links.set(link, { token, expires: Math.min(expires, now + this.settings.linkTtlMs) });
    return { ok: true, operator: request.operator, token, link, expiresAt: new Date(expires) };
  }

  /** The session a one-time link stands for, once; undefined for a link used, expired or never given. */
  redeem(link: string): { token: string; expiresAt: Date } | undefined {
    const now = this.now();
    this.sweep(now);
    const waiting = this.links.get(link);
    if (!waiting) return undefined;
    this.links.delete(link);
    const session = this.sessions.get(waiting.token);
    return session ? { token: waiting.token, expiresAt: new Date(session.expires) } : undefined;
  }

  /** The operator a token's session is for, checked now: expired, ended or revoked since, it is refused. */
  check(token: string | undefined): { ok: true; operator: string } | SessionRefusal {
    if (token === undefined) return { ok: false, why: 'the console answers reads only to an operator, and this request carries no session', remedy: `${OPEN_REMEDY} and open the address it prints, or send its token as \`Authorization: Bearer TOKEN\`` };
    const now = this.now();
    this.sweep(now);
    const session = this.sessions.get(token);
    if (!session) return { ok: false, why: 'the session is not one this controller opened, or it expired (a restarted controller forgets its sessions)', remedy: OPEN_REMEDY };
    const operator = this.operators(session.operator);
    if (!operator || operator.revoked) {
      this.sessions.delete(token);
      return { ok: false, why: `operator ${session.operator} was revoked since the session was opened`, remedy: 'a revoked operator reads nothing; ask another operator' };
    }
    return { ok: true, operator: session.operator };
  }

  private spend(nonce: string, address: string): void {
    this.nonces.delete(nonce);
    const left = (this.noncesByClient.get(address) ?? 1) - 1;
    if (left > 0) this.noncesByClient.set(address, left);
    else this.noncesByClient.delete(address);
  }

  private sweep(now: number): void {
    // Every nonce and link lives as long as the others, so the oldest are at the front; sessions too.
    for (const [nonce, waiting] of this.nonces) {
      if (waiting.expires > now) break;
      this.spend(nonce, waiting.address);
    }
    dropExpired(this.links, now);
    dropExpired(this.sessions, now);
  }
}
