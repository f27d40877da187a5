import net from 'node:net';
import type { Owner } from './broker';
import { switchableServer } from './switchable-server';

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
  const server = switchableServer(() => net.createServer((inbound) => {
    const outbound = net.connect(target.port, target.host);
    for (const [a, b] of [[inbound, outbound], [outbound, inbound]]) {
      a.pipe(b);
      a.once('error', () => b.destroy());
      a.once('close', () => b.destroy());
    }
  }));
  await server.listen();
  t.teardown(() => server.stop());
  return { host: '127.0.0.1', get port() { return server.port; }, cut: () => server.stop(), restore: () => server.listen() };
}
