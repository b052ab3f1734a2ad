import { connect, createServer, type Server, type Socket } from 'node:net';
import { freePort } from '../../src/dev/ports.js';

// A TCP relay of the test's own between a client and the NATS server, on a loopback port of its
// own: `cut` drops every connection through it and stops listening (the client is refused while
// it is cut, as across a broken link), `restore` listens on the same port again. The server never
// sees a fault; only what connects through the relay does.

export interface CutProxy {
  /** nats://127.0.0.1:<port> of the relay */
  url: string;
  /** connections the relay has accepted: each cut followed by a reconnect adds one */
  accepted(): number;
  cut(): Promise<void>;
  restore(): Promise<void>;
  close(): Promise<void>;
}

export const cutProxy = async (target: string): Promise<CutProxy> => {
  const { hostname, port: targetPort } = new URL(target);
  const port = await freePort();
  const sockets = new Set<Socket>();
  let accepted = 0;
  let server: Server | undefined;
  const track = (socket: Socket): void => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const listen = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const relay = createServer((client) => {
        accepted++;
        const upstream = connect({ host: hostname, port: Number(targetPort) });
        track(client);
        track(upstream);
        client.once('close', () => upstream.destroy());
        upstream.once('close', () => client.destroy());
        client.pipe(upstream);
        upstream.pipe(client);
      });
      relay.once('error', reject);
      relay.listen(port, '127.0.0.1', () => resolve());
      server = relay;
    });
  const cut = async (): Promise<void> => {
    const closing = server;
    server = undefined;
    const closed = closing ? new Promise<void>((resolve) => closing.close(() => resolve())) : Promise.resolve();
    for (const socket of sockets) socket.destroy();
    await closed;
  };
  await listen();
  return { url: `nats://127.0.0.1:${port}`, accepted: () => accepted, cut, restore: () => (server ? Promise.resolve() : listen()), close: cut };
};
