import fs from 'node:fs';
import net from 'node:net';

/**
 * Ports for servers a test stops and starts again on the same port (outage
 * tests) are taken below the kernel's ephemeral range: a port from that range
 * may, while its server is down, become the local end of any outgoing
 * connection on the machine (or of a client's connection to itself), and the
 * server could not listen again. Nothing takes a port below that range
 * unless asked for it by number.
 */
const below = (() => {
  try {
    const low = Number(fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 12_000 ? Math.min(low, 32_768) : 0;
  } catch {
    return 0;
  }
})();
const FIRST = 10_000;

function listenOnce(port: number): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' || err.code === 'EACCES' ? resolve(undefined) : reject(err)));
    s.listen(port, '127.0.0.1', () => {
      const got = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(got));
    });
  });
}

/** A port free on 127.0.0.1 now (closed again: the caller listens on it), outside the ephemeral range where it can. */
export async function freePort(): Promise<number> {
  if (below) {
    for (let i = 0; i < 50; i++) {
      const port = await listenOnce(FIRST + Math.floor(Math.random() * (below - FIRST)));
      if (port) return port;
    }
  }
  return (await listenOnce(0))!;
}

/**
 * Listen on 127.0.0.1 at `port`, or, when 0, at a free port as above (another
 * one if a test took it first); the port listened on.
 */
export async function listenAt(server: net.Server, port: number): Promise<number> {
  for (let attempt = 0; ; attempt++) {
    const at = port || await freePort();
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(at, '127.0.0.1', () => { server.off('error', reject); resolve(); });
      });
      return (server.address() as net.AddressInfo).port;
    } catch (err) {
      if (port || attempt >= 4 || (err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    }
  }
}
