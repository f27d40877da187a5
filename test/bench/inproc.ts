import type http from 'node:http';
import { Duplex } from 'node:stream';

/**
 * Requests pushed into a controller's own node:http server in process
 * (api-inproc.ts, mcp.ts): its parser makes the request as it does for a
 * socket, and the answer goes to a connection that only counts it.
 */

export interface Case { name: string; method: string; url: string; headers: Record<string, string>; body?: Buffer }

/** A connection to `server` that takes every write and counts it; `send` settles once the whole answer (by its Content-Length) was written. */
export function connect(server: http.Server): { send(request: Buffer): Promise<void>; answer(): Buffer } {
  let head = '';
  let total = -1;
  let got = 0;
  let kept: Buffer[] = [];
  let wake: (() => void) | undefined;
  const take = (c: Buffer | string) => {
    got += c.length;
    kept.push(typeof c === 'string' ? Buffer.from(c, 'latin1') : c);
    if (total >= 0) return;
    head += typeof c === 'string' ? c : c.toString('latin1');
    const end = head.indexOf('\r\n\r\n');
    if (end >= 0) total = end + 4 + Number(/Content-Length: (\d+)/i.exec(head)![1]);
  };
  const written = () => {
    if (total < 0 || got < total || !wake) return;
    const w = wake;
    wake = undefined;
    w();
  };
  // text is taken as text, as a real socket takes it (a Duplex would turn it into a Buffer first)
  const socket = new Duplex({
    decodeStrings: false,
    write(c: Buffer | string, _e, cb) { take(c); cb(); written(); },
    writev(cs: { chunk: Buffer | string }[], cb) { for (const c of cs) take(c.chunk); cb(); written(); },
    read() {},
  });
  Object.defineProperty(socket, 'remoteAddress', { value: '127.0.0.1' });
  server.emit('connection', socket);
  return {
    send(request) {
      return new Promise((resolve) => {
        head = '';
        total = -1;
        got = 0;
        kept = [];
        wake = resolve;
        socket.push(request);
      });
    },
    answer: () => Buffer.concat(kept),
  };
}

/** A request's bytes, as a client sends them. */
export function requestOf(c: Case): Buffer {
  const lines = [`${c.method} ${c.url} HTTP/1.1`, 'Host: 127.0.0.1:8812', ...Object.entries(c.headers).map(([k, v]) => `${k}: ${v}`)];
  if (c.body) lines.push(`Content-Length: ${c.body.length}`);
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`), c.body ?? Buffer.alloc(0)]);
}
