import { loadOperatorKey, signConsoleNonce, type OperatorKey } from '../adapters/operator-keys.js';
import { loadConfig, type MeshConfig } from '../config.js';
import { consoleChallengeSchema, consoleSessionAnswerSchema } from '../domain/operators/console-session.js';
import { RefusedError, UnavailableError, ValidationError } from '../errors.js';
import { output } from './output.js';

// mesh console open [--url URL]
//
// The console answers reads only to an operator's session (docs/decisions.md, "Reading needs a
// reason"). This verb asks the controller for a nonce, signs it with the operator's key, and
// prints the address a browser opens once to hold the session; --json gives the token as well,
// for an API client (`Authorization: Bearer TOKEN`).

/** Where the console answers: --url, MESH_CONSOLE_URL, else the address the controller listens on (a wildcard read as loopback). */
export const consoleUrl = (config: Pick<MeshConfig, 'httpHost' | 'httpPort'>, given: string | undefined, env: NodeJS.ProcessEnv = process.env): URL => {
  const raw = given ?? env.MESH_CONSOLE_URL;
  if (raw === undefined || raw === '') {
    const host = config.httpHost === '0.0.0.0' || config.httpHost === '' ? '127.0.0.1' : config.httpHost === '::' ? '[::1]' : config.httpHost.includes(':') ? `[${config.httpHost}]` : config.httpHost;
    return new URL(`http://${host}:${config.httpPort}/`);
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ValidationError(`--url "${raw.slice(0, 80)}" is not a URL: give the console's address, e.g. http://127.0.0.1:18080`, { field: '--url', value: raw.slice(0, 80) });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ValidationError(`--url "${raw.slice(0, 80)}" is not http or https`, { field: '--url', value: raw.slice(0, 80) });
  return new URL('/', url);
};

/** The controller's answer, or what it means: a refusal in its own words (3), bad input (2), unavailable (6). */
const ask = async (url: URL, init: RequestInit, what: string): Promise<unknown> => {
  let response: Response;
  try {
    response = await fetch(url, { ...init, signal: AbortSignal.timeout(15_000), redirect: 'manual' });
  } catch (error) {
    throw new UnavailableError(`the console at ${url.origin} did not answer ${what} (${(error as Error).cause instanceof Error ? ((error as Error).cause as Error).message : (error as Error).message}): is the controller running, and is this its address? (--url, MESH_CONSOLE_URL)`, { url: url.origin });
  }
  const text = await response.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new UnavailableError(`the console at ${url.origin} answered ${what} with ${response.status} and no JSON: is it a mesh controller?`, { url: url.origin, status: response.status });
  }
  if (response.ok) return body;
  const refused = (body as { refused?: { what?: string; why?: string; remedy?: string }[] }).refused?.[0];
  const said = refused ? `${refused.why ?? ''}${refused.remedy ? `; ${refused.remedy}` : ''}` : `status ${response.status}`;
  if (response.status === 400) throw new ValidationError(`the console refused ${what} as malformed: ${said}`, { field: refused?.what ?? 'body' });
  if (response.status === 401 || response.status === 403) throw new RefusedError(`the console refused ${what}: ${said}`, { url: url.origin, status: response.status });
  throw new UnavailableError(`the console answered ${what} with ${response.status}: ${said}`, { url: url.origin, status: response.status });
};

/** Opens a console session as the operator whose key this is: the bearer token, and the one-time address a browser opens. */
export const openConsoleSession = async (base: URL, key: OperatorKey): Promise<{ operator: string; token: string; open: string; expiresAt: string }> => {
  const challenge = consoleChallengeSchema.safeParse(await ask(new URL('/api/session/challenge', base), { method: 'GET' }, 'a nonce'));
  if (!challenge.success) throw new UnavailableError(`the console at ${base.origin} gave a nonce this CLI cannot read: is it a mesh controller of this version?`, { url: base.origin });
  const body = { operator: key.operator, nonce: challenge.data.nonce, signature: signConsoleNonce(key, challenge.data.nonce) };
  const answer = consoleSessionAnswerSchema.safeParse(await ask(new URL('/api/session', base), { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }, `a session for ${key.operator}`));
  if (!answer.success) throw new UnavailableError(`the console at ${base.origin} opened a session this CLI cannot read: is it a mesh controller of this version?`, { url: base.origin });
  return { operator: answer.data.operator, token: answer.data.token, open: new URL(answer.data.open, base).toString(), expiresAt: answer.data.expiresAt };
};

export const consoleOpen = async (values: { json?: true; url?: string }): Promise<number> => {
  const out = output(values.json ?? false);
  const config = loadConfig();
  const base = consoleUrl(config, values.url);
  const answer = { data: await openConsoleSession(base, loadOperatorKey(config.operatorKeyFile)) };
  const open = answer.data.open;
  if (out.json) out.data({ ok: true, operator: answer.data.operator, url: open, token: answer.data.token, expiresAt: answer.data.expiresAt });
  else {
    out.line(open);
    process.stderr.write(`Open that address in a browser within a minute (it is good once): the console then knows you as ${answer.data.operator} until ${answer.data.expiresAt}.\n`);
  }
  return 0;
};
