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

/** A loopback port nothing listens on right now (the kernel's choice). */
export const freePort = (): Promise<number> =>
  new Promise((resolvePromise, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolvePromise(port));
    });
  });

export const waitFor = async (what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};
