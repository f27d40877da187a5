import net from 'node:net';
import type { Owner } from './broker';

/**
 * A TCP relay between a client and a server on an ephemeral port: `cut`
 * closes it and every connection through it (the client loses its server
 * while the server stays up: the link is gone, not the broker), `restore`
 * listens again on the same port.
 */
export interface TcpProxy {
  host: string;
  port: number;
  cut(): Promise<void>;
  restore(): Promise<void>;
}

export async function startProxy(t: Owner, target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  let server: net.Server | undefined;
  let port = 0;
  const listen = async () => {
    const s = net.createServer((inbound) => {
      const outbound = net.connect(target.port, target.host);
      for (const [a, b] of [[inbound, outbound], [outbound, inbound]]) {
        sockets.add(a);
        a.pipe(b);
        a.once('error', () => b.destroy());
        a.once('close', () => { sockets.delete(a); b.destroy(); });
      }
    });
    await new Promise<void>((resolve, reject) => {
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => resolve());
    });
    server = s;
    port = (s.address() as net.AddressInfo).port;
  };
  const cut = async () => {
    const s = server;
    server = undefined;
    if (!s) return;
    const closed = new Promise<void>((r) => s.close(() => r()));
    for (const sock of sockets) sock.destroy();
    await closed;
  };
  await listen();
  t.teardown(cut);
  return { host: '127.0.0.1', get port() { return port; }, cut, restore: listen };
}
