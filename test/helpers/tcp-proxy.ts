import net from 'node:net';
import type { Owner } from './broker';
import { switchableServer } from './switchable-server';

/**
 * A TCP relay between a client and a server on an ephemeral port: `cut`
 * closes it and every connection through it (the client loses its server
 * while the server stays up: the link is gone, not the broker), `restore`
 * listens again on the same port. `freeze` stops relaying while every
 * connection stays open (a server that hangs: the client learns it only
 * from its own time-outs, an MQTT keepalive).
 */
export interface TcpProxy {
  host: string;
  port: number;
  cut(): Promise<void>;
  restore(): Promise<void>;
  freeze(): void;
}

export async function startProxy(t: Owner, target: { host: string; port: number }): Promise<TcpProxy> {
  let frozen = false;
  const live = new Set<net.Socket>();
  const server = switchableServer(() => net.createServer((inbound) => {
    live.add(inbound);
    inbound.once('close', () => live.delete(inbound));
    // frozen: taken and never answered
    if (frozen) return void inbound.on('error', () => undefined).pause();
    const outbound = net.connect(target.port, target.host);
    live.add(outbound);
    outbound.once('close', () => live.delete(outbound));
    for (const [a, b] of [[inbound, outbound], [outbound, inbound]]) {
      a.pipe(b);
      a.once('error', () => b.destroy());
      a.once('close', () => b.destroy());
    }
  }));
  await server.listen();
  t.teardown(() => { for (const s of live) s.destroy(); return server.stop(); });
  const freeze = () => {
    frozen = true;
    for (const s of live) { s.unpipe(); s.pause(); }
  };
  return { host: '127.0.0.1', get port() { return server.port; }, cut: () => server.stop(), restore: () => server.listen(), freeze };
}
