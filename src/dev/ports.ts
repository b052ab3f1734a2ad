import { readFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';

/** True when something accepts TCP connections on 127.0.0.1:port. */
export const isListening = (port: number, host = '127.0.0.1', timeoutMs = 500): Promise<boolean> =>
  new Promise((resolvePromise) => {
    const socket = createConnection({ port, host });
    const done = (answer: boolean): void => {
      socket.destroy();
      resolvePromise(answer);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });

const bindsOn = (port: number): Promise<number | undefined> =>
  new Promise((resolvePromise) => {
    const server = createServer();
    server.once('error', () => resolvePromise(undefined));
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      const bound = typeof address === 'object' && address ? address.port : undefined;
      server.close(() => resolvePromise(bound));
    });
  });

/** The first port the kernel hands to outgoing connections (Linux), or its usual default elsewhere. */
const ephemeralRangeStart = (): number => {
  try {
    const first = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(first) && first > PICKED_PORTS_FROM + 1000 ? first : 32768;
  } catch {
    return 32768;
  }
};

const PICKED_PORTS_FROM = 20000;

/**
 * A loopback port nothing listens on right now. Picked at random below the kernel's outgoing range:
 * a port the kernel chose for a listener can be handed to an outgoing connection's own end before the
 * server that was meant to have it binds, and then the server fails with "address already in use".
 */
export const freePort = async (): Promise<number> => {
  const below = ephemeralRangeStart();
  for (let attempt = 0; attempt < 50; attempt++) {
    const candidate = PICKED_PORTS_FROM + Math.floor(Math.random() * (below - PICKED_PORTS_FROM));
    if ((await bindsOn(candidate)) !== undefined) return candidate;
  }
  const kernelChoice = await bindsOn(0);
  if (kernelChoice === undefined) throw new Error('no free loopback port: binding 127.0.0.1:0 failed');
  return kernelChoice;
};

export const waitFor = async (what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};
