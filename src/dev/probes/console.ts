import { request as httpRequest, type IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { OperatorKey } from '../../adapters/operator-keys.js';
import { newIdentity, signBytes } from '../../adapters/identity.js';
import { signCommand, signConsoleNonce } from '../../adapters/operator-keys.js';
import { isLoopback } from '../../controller/http/console-access.js';
import { DEFAULT_HTTP_LIMITS } from '../../controller/http/limits.js';
import { consoleSessionBytes } from '../../domain/operators/console-session.js';
import type { AttackOutcome } from '../security-probe.js';

// The attacks a local user would try against the controller's console and API, each tried for
// real against a running one (`npm start` serves it on http://127.0.0.1:18080): more idle sockets
// and fact streams than its bounds, asset names that are properties of every object, reads with
// no session and sessions with a forged or replayed signature. Each attack comes back refused, or
// says why it was not tried.

export interface ConsoleProbeTargets {
  /** the console's address, e.g. http://127.0.0.1:18080 */
  consoleUrl: string;
  /** an operator of the mesh and their key: with it, a session is opened for real and its nonce replayed */
  operator?: { name: string; key: Pick<OperatorKey, 'secretKey'> };
  /** idle sockets to open (default: more than the controller's default bound in all) */
  idleSockets?: number;
  /** fact streams to open (default: more than the controller's default bound in all) */
  streams?: number;
}

interface Answer {
  status: number;
  headers: IncomingMessage['headers'];
  text: string;
  /** a 200 fact stream, left open */
  stream?: IncomingMessage;
}

const TIMEOUT_MS = 10_000;

/** One request on a socket of its own, from `from` if given; a 200 fact stream is kept open and given back. */
const ask = (base: URL, path: string, options: { from?: string; method?: string; headers?: Record<string, string>; body?: string; keepOpen?: boolean } = {}): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const url = new URL(path, base);
    const req = httpRequest(
      { host: url.hostname, port: url.port, path: `${url.pathname}${url.search}`, method: options.method ?? 'GET', headers: options.headers, agent: false, timeout: TIMEOUT_MS, ...(options.from ? { localAddress: options.from } : {}) },
      (response) => {
        if (options.keepOpen && response.statusCode === 200) {
          resolve({ status: 200, headers: response.headers, text: '', stream: response });
          return;
        }
        let text = '';
        response.on('data', (chunk: Buffer) => (text += chunk.toString()));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, text }));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${TIMEOUT_MS} ms`)));
    req.on('error', reject);
    req.end(options.body);
  });

/** A socket that connects and says nothing; it reads what comes, so it sees its end. */
const idleSocket = (base: URL, from: string | undefined): Promise<Socket> =>
  new Promise((resolve) => {
    const socket = connect({ host: base.hostname, port: Number(base.port), ...(from ? { localAddress: from } : {}) });
    socket.on('error', () => undefined);
    socket.resume();
    socket.once('connect', () => resolve(socket));
    socket.once('close', () => resolve(socket));
  });

/** The addresses a flood comes from: loopback ones of its own when the console is on loopback (127.0.0.0/8 is all loopback on Linux). */
const floodAddresses = (base: URL, count: number): (string | undefined)[] =>
  isLoopback(base.hostname) ? Array.from({ length: count }, (_, i) => `127.0.${Math.floor(i / 250) + 1}.${(i % 250) + 2}`) : [undefined];

const answered = async (base: URL, path: string, from?: string): Promise<string> => {
  try {
    const answer = await ask(base, path, from ? { from } : {});
    return `${path} answered ${answer.status}`;
  } catch (error) {
    return `${path} did not answer (${(error as Error).message})`;
  }
};

const nonceOf = async (base: URL): Promise<string | undefined> => {
  const answer = await ask(base, '/api/session/challenge');
  return answer.status === 200 ? (JSON.parse(answer.text) as { nonce?: string }).nonce : undefined;
};

const postSession = (base: URL, body: unknown): Promise<Answer> => ask(base, '/api/session', { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });

/** A session opened as the operator (their key signing a fresh nonce): its token, or undefined when refused. */
const openSession = async (base: URL, operator: NonNullable<ConsoleProbeTargets['operator']>): Promise<string | undefined> => {
  const nonce = await nonceOf(base);
  if (!nonce) return undefined;
  const answer = await postSession(base, { operator: operator.name, nonce, signature: signConsoleNonce({ operator: operator.name, publicKey: '', secretKey: operator.key.secretKey }, nonce) });
  return answer.status === 201 ? (JSON.parse(answer.text) as { token?: string }).token : undefined;
};

/** Every console attack, in order, each with its outcome. */
export const probeConsole = async (targets: ConsoleProbeTargets): Promise<AttackOutcome[]> => {
  const base = new URL(targets.consoleUrl);
  const outcomes: AttackOutcome[] = [];
  const reachable = await answered(base, '/healthz');
  if (!reachable.endsWith('answered 200')) {
    return [{ attack: 'the console answers at all', refused: false, untried: true, detail: `${reachable}: is the controller running at ${base.origin}? (\`npm start\` raises the demo it attacks)` }];
  }

  // 1. Idle sockets, more than every bound: those past it give way, and /healthz still answers.
  const idleCount = targets.idleSockets ?? DEFAULT_HTTP_LIMITS.maxConnections + 2 * DEFAULT_HTTP_LIMITS.maxConnectionsPerClient;
  const from = floodAddresses(base, Math.ceil(idleCount / (DEFAULT_HTTP_LIMITS.maxConnectionsPerClient + 8)));
  const sockets: Socket[] = [];
  try {
    for (let i = 0; i < idleCount; i += 1) sockets.push(await idleSocket(base, from[i % from.length]));
    await new Promise((r) => setTimeout(r, 500));
    const closed = sockets.filter((s) => s.destroyed || s.readyState !== 'open').length;
    const health = await answered(base, '/healthz');
    const healthFromFlood = from[0] ? await answered(base, '/healthz', from[0]) : health;
    const ok = health.endsWith('answered 200') && healthFromFlood.endsWith('answered 200');
    outcomes.push({
      attack: `${idleCount} idle sockets from ${from.length} address(es), more than the bounds`,
      refused: ok && closed > 0,
      detail: `${closed} of them closed by the controller; ${health}${from[0] ? `; from ${from[0]}, ${healthFromFlood}` : ''}`,
    });
  } finally {
    for (const socket of sockets) socket.destroy();
  }

  // 2. Fact streams, more than one address may hold and more than all may: a 503 with Retry-After
  // (asked with the operator's session when one is given, so the bound itself is what refuses them).
  const session = targets.operator ? await openSession(base, targets.operator) : undefined;
  const headers: Record<string, string> = session ? { authorization: `Bearer ${session}` } : {};
  const streamCount = targets.streams ?? DEFAULT_HTTP_LIMITS.maxStreams + DEFAULT_HTTP_LIMITS.maxStreamsPerClient * 2;
  const streamFrom = floodAddresses(base, Math.ceil(streamCount / (DEFAULT_HTTP_LIMITS.maxStreamsPerClient + 2)));
  const open: IncomingMessage[] = [];
  try {
    const refusals = new Map<string, number>();
    for (let i = 0; i < streamCount; i += 1) {
      const answer = await ask(base, '/api/facts/stream', { keepOpen: true, headers, ...(streamFrom[i % streamFrom.length] ? { from: streamFrom[i % streamFrom.length] as string } : {}) }).catch((error: unknown) => ({ status: 0, headers: {}, text: (error as Error).message }) as Answer);
      if (answer.stream) open.push(answer.stream);
      else {
        const said = `${answer.status}${answer.headers['retry-after'] ? ` (Retry-After ${String(answer.headers['retry-after'])})` : ''}`;
        refusals.set(said, (refusals.get(said) ?? 0) + 1);
      }
    }
    const health = await answered(base, '/healthz');
    const refusedAll = [...refusals.keys()].every((k) => k.startsWith('503') || k.startsWith('401'));
    outcomes.push({
      attack: `${streamCount} fact streams from ${streamFrom.length} address(es), more than the bounds`,
      refused: open.length < streamCount && refusedAll && health.endsWith('answered 200'),
      detail: `${open.length} opened, the rest answered ${[...refusals].map(([k, n]) => `${k} ×${n}`).join(', ') || 'nothing'}; ${health}`,
    });
  } finally {
    for (const stream of open) stream.destroy();
  }

  // 3. Asset names that every object has as a property, and a path climbing out.
  for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty', '%2e%2e%2fx', '..%2f..%2fpackage.json']) {
    const answer = await ask(base, `/assets/${name}`).catch((error: unknown) => ({ status: 0, headers: {}, text: (error as Error).message }) as Answer);
    outcomes.push({ attack: `GET /assets/${name}`, refused: answer.status === 404, detail: `answered ${answer.status}${answer.status === 404 ? ' (no such asset)' : `: ${answer.text.slice(0, 120)}`}` });
  }

  // 4. A read with no session: refused wherever a session is required.
  const read = await ask(base, '/api/overview');
  if (read.status === 401) outcomes.push({ attack: 'GET /api/overview with no session', refused: true, detail: `401: ${read.text.slice(0, 200)}` });
  else if (read.status === 200 && isLoopback(base.hostname)) {
    outcomes.push({ attack: 'GET /api/overview with no session', refused: false, untried: true, detail: 'the console is open on loopback (MESH_CONSOLE_AUTH=open, the demo default): start the controller with MESH_CONSOLE_AUTH=required to try this' });
  } else outcomes.push({ attack: 'GET /api/overview with no session', refused: false, detail: `answered ${read.status} beyond loopback with no session` });

  // 5. Sessions opened with a signature that is not the operator's.
  const claimed = targets.operator?.name ?? 'ada';
  const forgedNonce = await nonceOf(base);
  if (forgedNonce) {
    const forged = await postSession(base, { operator: claimed, nonce: forgedNonce, signature: signBytes(newIdentity(), consoleSessionBytes({ operator: claimed, nonce: forgedNonce })) });
    outcomes.push({ attack: `a session for ${claimed}, signed with a key that is not theirs`, refused: forged.status === 401, detail: `${forged.status}: ${forged.text.slice(0, 200)}` });
  }
  if (targets.operator) {
    const key = { operator: targets.operator.name, publicKey: '', secretKey: targets.operator.key.secretKey };
    const nonce = await nonceOf(base);
    if (nonce) {
      const asCommand = await postSession(base, { operator: key.operator, nonce, signature: signCommand(key, nonce, { type: 'add-node', node: 'probe' }, new Date()).signature });
      outcomes.push({ attack: `a command's signature by ${key.operator} offered as a session's`, refused: asCommand.status === 401, detail: `${asCommand.status}: ${asCommand.text.slice(0, 200)}` });
    }
    const fresh = await nonceOf(base);
    if (fresh) {
      const body = { operator: key.operator, nonce: fresh, signature: signConsoleNonce(key, fresh) };
      const first = await postSession(base, body);
      const replayed = await postSession(base, body);
      outcomes.push({
        attack: `${key.operator}'s session request replayed`,
        refused: first.status === 201 && replayed.status === 401,
        detail: `the first answered ${first.status}, the replay ${replayed.status}: ${replayed.text.slice(0, 200)}`,
      });
    }
  } else outcomes.push({ attack: "an operator's session request replayed", refused: false, untried: true, detail: 'no operator key given to the probe, so no real session to replay' });

  return outcomes;
};
