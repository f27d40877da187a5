import net from 'node:net';

/**
 * A server on an ephemeral port that can go away and come back on the same
 * port (an outage): `stop` closes it and every connection it took, `listen`
 * makes a new one with `make` and listens again.
 */
export interface SwitchableServer { readonly port: number; listen(): Promise<void>; stop(): Promise<void> }

export function switchableServer(make: () => net.Server): SwitchableServer {
  const sockets = new Set<net.Socket>();
  let server: net.Server | undefined;
  let port = 0;
  return {
    get port() { return port; },
    async listen() {
      const s = make();
      s.on('connection', (sock: net.Socket) => {
        sockets.add(sock);
        sock.once('close', () => sockets.delete(sock));
      });
      await new Promise<void>((resolve, reject) => {
        s.once('error', reject);
        s.listen(port, '127.0.0.1', () => resolve());
      });
      server = s;
      port = (s.address() as net.AddressInfo).port;
    },
    async stop() {
      const s = server;
      server = undefined;
      if (!s) return;
      const closed = new Promise<void>((r) => s.close(() => r()));
      for (const sock of sockets) sock.destroy();
      await closed;
    },
  };
}
