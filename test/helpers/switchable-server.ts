import net from 'node:net';
import { listenAt } from './ports';

/**
 * A server on a free port (below the ephemeral range: ports.ts) that can go away and come back on the same
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
      port = await listenAt(s, port);
      server = s;
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
