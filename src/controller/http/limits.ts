import type { Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { ValidationError } from '../../errors.js';

// What the console and API hold under abuse (docs/decisions.md, "The console holds under abuse"):
// every connection is counted by the address it comes from and in all, a silent one is closed,
// a request must arrive whole within a bound, a body has a size limit, and the fact stream has a
// bound of its own. A process that takes every socket anyone opens runs out of file descriptors,
// and then answers nobody — not its probes, not NATS, not PostgreSQL.

export interface HttpLimits {
  /** connections open at once, from every client */
  maxConnections: number;
  /** connections open at once from one remote address */
  maxConnectionsPerClient: number;
  /** fact streams (`/api/facts/stream`) open at once, from every client */
  maxStreams: number;
  /** fact streams open at once from one remote address */
  maxStreamsPerClient: number;
  /** a socket silent this long (nothing read, nothing written) is closed */
  idleTimeoutMs: number;
  /** a kept-alive connection with no request is closed after this */
  keepAliveTimeoutMs: number;
  /** a request's headers must have arrived within this */
  headersTimeoutMs: number;
  /** a request must have arrived whole within this */
  requestTimeoutMs: number;
  /** the largest body taken, in bytes */
  bodyLimitBytes: number;
}

export const DEFAULT_HTTP_LIMITS: HttpLimits = {
  maxConnections: 256,
  maxConnectionsPerClient: 32,
  maxStreams: 32,
  maxStreamsPerClient: 4,
  idleTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  // A signed command is at most the bus's max_payload (1 MiB by default): nothing larger is a command.
  bodyLimitBytes: 1_048_576,
};

/** Each limit's environment variable, with its range. */
const SETTINGS: Record<keyof HttpLimits, { env: string; max: number; unit: string }> = {
  maxConnections: { env: 'MESH_HTTP_MAX_CONNECTIONS', max: 100_000, unit: 'connections' },
  maxConnectionsPerClient: { env: 'MESH_HTTP_MAX_CONNECTIONS_PER_CLIENT', max: 100_000, unit: 'connections' },
  maxStreams: { env: 'MESH_HTTP_MAX_STREAMS', max: 100_000, unit: 'streams' },
  maxStreamsPerClient: { env: 'MESH_HTTP_MAX_STREAMS_PER_CLIENT', max: 100_000, unit: 'streams' },
  idleTimeoutMs: { env: 'MESH_HTTP_IDLE_TIMEOUT_MS', max: 3_600_000, unit: 'milliseconds' },
  keepAliveTimeoutMs: { env: 'MESH_HTTP_KEEP_ALIVE_TIMEOUT_MS', max: 3_600_000, unit: 'milliseconds' },
  headersTimeoutMs: { env: 'MESH_HTTP_HEADERS_TIMEOUT_MS', max: 3_600_000, unit: 'milliseconds' },
  requestTimeoutMs: { env: 'MESH_HTTP_REQUEST_TIMEOUT_MS', max: 3_600_000, unit: 'milliseconds' },
  bodyLimitBytes: { env: 'MESH_HTTP_BODY_LIMIT_BYTES', max: 64 * 1_048_576, unit: 'bytes' },
};

/** The limits from MESH_HTTP_* (docs/operations.md lists them), each a whole number in its range; the rest default. */
export const httpLimitsFromEnv = (env: NodeJS.ProcessEnv = process.env): HttpLimits => {
  const limits = { ...DEFAULT_HTTP_LIMITS };
  for (const key of Object.keys(SETTINGS) as (keyof HttpLimits)[]) {
    const { env: name, max, unit } = SETTINGS[key];
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    const value = Number(raw);
    if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(value) || value < 1 || value > max) {
      throw new ValidationError(`${name} "${raw.slice(0, 40)}" is not a whole number of ${unit} from 1 to ${max}`, { field: name, value: raw.slice(0, 40) });
    }
    limits[key] = value;
  }
  return checkedLimits(limits);
};

/** Limits that hold together: node refuses headers waited for longer than the whole request. */
export const checkedLimits = (limits: HttpLimits): HttpLimits => {
  const problems: string[] = [];
  if (limits.headersTimeoutMs > limits.requestTimeoutMs) problems.push(`the headers timeout (${limits.headersTimeoutMs} ms) is longer than the request timeout (${limits.requestTimeoutMs} ms)`);
  if (limits.maxConnectionsPerClient > limits.maxConnections) problems.push(`one client may hold more connections (${limits.maxConnectionsPerClient}) than all of them (${limits.maxConnections})`);
  if (limits.maxStreamsPerClient > limits.maxStreams) problems.push(`one client may hold more fact streams (${limits.maxStreamsPerClient}) than all of them (${limits.maxStreams})`);
  if (limits.maxStreams >= limits.maxConnections) problems.push(`fact streams (${limits.maxStreams}) would leave no connection for anything else (${limits.maxConnections} in all)`);
  if (problems.length > 0) throw new ValidationError(`the HTTP limits do not hold together: ${problems.join('; ')}`, { field: 'MESH_HTTP_*' });
  return limits;
};

/** How often a fact stream says it is still there: well within the idle timeout, so an open stream is never taken for a silent socket. */
export const streamKeepAliveMs = (limits: HttpLimits): number => Math.max(250, Math.min(15_000, Math.floor(limits.idleTimeoutMs / 3)));

export interface ConnectionCounts {
  total: number;
  byClient: Map<string, number>;
  /** sockets closed because a bound was reached, since the start */
  turnedAway: number;
  /** idle sockets closed to make room for a newcomer, since the start */
  evicted: number;
}

/**
 * Counts every socket on the 'connection' event, by remote address and in all. A newcomer over its
 * client's bound takes the place of that client's oldest idle socket (one serving no request);
 * over the bound in all, of the oldest idle socket of the client that holds the most. Idle
 * sockets (a silent one, one whose headers never end) are what a flood is made of: they give way,
 * so a probe or an operator arriving after a flood still gets in, from another address or the
 * same. Only when no socket there is idle is the newcomer destroyed at once (turned away).
 */
export const guardConnections = (server: Server, limits: HttpLimits): { counts: () => ConnectionCounts } => {
  const byClient = new Map<string, Set<Socket>>();
  const busy = new WeakSet<Socket>();
  let total = 0;
  let turnedAway = 0;
  let evicted = 0;
  // A hard ceiling under the count above, so that a burst of sockets arriving faster than those
  // destroyed close still stops short of the process's file descriptors.
  server.maxConnections = limits.maxConnections * 2;

  const forget = (address: string, socket: Socket): void => {
    const sockets = byClient.get(address);
    if (!sockets?.delete(socket)) return;
    total -= 1;
    if (sockets.size === 0) byClient.delete(address);
  };
  const oldestIdle = (sockets: Iterable<Socket>): Socket | undefined => {
    for (const socket of sockets) if (!busy.has(socket)) return socket;
    return undefined;
  };
  const victim = (): Socket | undefined => {
    const fullest = [...byClient.values()].sort((a, b) => b.size - a.size);
    for (const sockets of fullest) {
      const socket = oldestIdle(sockets);
      if (socket) return socket;
    }
    return undefined;
  };

  server.on('connection', (socket: Socket) => {
    // Where a socket comes from; a socket already gone has none.
    const address = socket.remoteAddress;
    if (address === undefined) {
      socket.destroy();
      return;
    }
    const mine = byClient.get(address) ?? new Set<Socket>();
    const out = mine.size >= limits.maxConnectionsPerClient ? oldestIdle(mine) : total >= limits.maxConnections ? victim() : null;
    if (out === undefined) {
      turnedAway += 1;
      socket.destroy();
      return;
    }
    if (out) {
      for (const [at, sockets] of byClient) if (sockets.has(out)) forget(at, out);
      evicted += 1;
      out.destroy();
    }
    mine.add(socket);
    byClient.set(address, mine);
    total += 1;
    socket.once('close', () => forget(address, socket));
  });
  // A socket serving a request is not idle until its answer is done (a fact stream never is).
  server.on('request', (request: { socket: Socket }, response: ServerResponse) => {
    const socket = request.socket;
    busy.add(socket);
    response.once('close', () => busy.delete(socket));
  });

  return {
    counts: () => ({ total, byClient: new Map([...byClient].map(([address, sockets]) => [address, sockets.size])), turnedAway, evicted }),
  };
};

/** Why a stream was not opened: said in the 503's body. */
export interface StreamRefusal {
  why: string;
  retryAfterSeconds: number;
}

/** The fact streams open now, by remote address and in all; each released once when its stream ends. */
export class StreamSlots {
  private readonly byClient = new Map<string, number>();
  private readonly open = new Set<() => void>();
  private total = 0;

  constructor(private readonly limits: Pick<HttpLimits, 'maxStreams' | 'maxStreamsPerClient'>) {}

  /** A slot for `address`, with what ends the stream when the server stops; or why there is none. */
  take(address: string, end: () => void): { release: () => void } | StreamRefusal {
    const mine = this.byClient.get(address) ?? 0;
    if (mine >= this.limits.maxStreamsPerClient) {
      return { why: `${mine} fact streams are open from ${address}, and one address may hold ${this.limits.maxStreamsPerClient} at once`, retryAfterSeconds: 30 };
    }
    if (this.total >= this.limits.maxStreams) {
      return { why: `${this.total} fact streams are open, as many as this controller holds at once (${this.limits.maxStreams})`, retryAfterSeconds: 30 };
    }
    this.byClient.set(address, mine + 1);
    this.total += 1;
    this.open.add(end);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.open.delete(end);
        this.total -= 1;
        const left = (this.byClient.get(address) ?? 1) - 1;
        if (left > 0) this.byClient.set(address, left);
        else this.byClient.delete(address);
      },
    };
  }

  /** Ends every open stream: a stopping server does not wait for clients that never hang up. */
  endAll(): void {
    for (const end of [...this.open]) end();
  }

  count(): number {
    return this.total;
  }
}
