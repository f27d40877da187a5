import fs from 'node:fs';
import http from 'node:http';
import { Duplex } from 'node:stream';
import { encode } from '@msgpack/msgpack';
import { startController, Keys } from '../helpers/controller';
import { HttpServer } from '../../core/http/server';
import { table, fmt, realKeys } from './lib';

/**
 * The API's own cost per call, in process: a `test` request goes through
 * node's own request and response objects on a socket that only counts
 * what is written, once through the controller's request handler and
 * once through a bare node:http handler answering the same bytes. No
 * kernel, no load generator, nothing else on the CPUs between the two: what
 * is left is the JavaScript a call runs beyond bare node:http, which moves
 * by ±0.3 µs between runs where the HTTP benchmark (api.ts) moves by
 * ±1.5 µs. It says where a change's microseconds went, not the ratio to
 * bare node:http (the kernel's loopback and node's parser are not in it):
 * that is api.ts's. BENCH_INPROC_N requests per pass (30,000), the least of
 * BENCH_INPROC_PASSES passes (5).
 */
const N = Number(process.env.BENCH_INPROC_N ?? 30_000);
const PASSES = Number(process.env.BENCH_INPROC_PASSES ?? 5);

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;
interface Case { name: string; method: string; url: string; headers: Record<string, string>; body?: Buffer }

/**
 * A socket that takes every write and counts it; its reading side never
 * yields anything. Text is taken as text, as a real socket takes it (a
 * Duplex would turn it into a Buffer first, a cost node:http never pays).
 */
function countingSocket(onWrite: (chunk: Buffer | string) => void = () => undefined): Duplex {
  const s = new Duplex({
    decodeStrings: false,
    write(c: Buffer | string, _e, cb) { onWrite(c); cb(); },
    writev(cs: { chunk: Buffer | string }[], cb) { for (const c of cs) onWrite(c.chunk); cb(); },
    read() {},
  });
  Object.defineProperty(s, 'remoteAddress', { value: '127.0.0.1' });
  return s;
}

/** One request through `handler`, settled once its answer is written. */
function once(handler: Handler, c: Case, onWrite?: (chunk: Buffer | string) => void): Promise<void> {
  return new Promise((resolve) => {
    const sock = countingSocket(onWrite);
    const req = new http.IncomingMessage(sock as never);
    req.method = c.method;
    req.url = c.url;
    req.headers = { ...c.headers, ...(c.body ? { 'content-length': String(c.body.length) } : {}) };
    const res = new http.ServerResponse(req);
    res.assignSocket(sock as never);
    res.on('finish', resolve);
    handler(req, res);
    if (c.body) req.push(c.body);
    // as node's parser marks a request read whole: else its end destroys the socket
    req.complete = true;
    req.push(null);
  });
}

/** CPU µs per request of `handler`: the least of PASSES passes of N after a warm-up. */
async function cost(handler: Handler, c: Case): Promise<number> {
  for (let i = 0; i < 20_000; i++) await once(handler, c);
  let least = Infinity;
  for (let p = 0; p < PASSES; p++) {
    const before = process.cpuUsage();
    for (let i = 0; i < N; i++) await once(handler, c);
    const used = process.cpuUsage(before);
    least = Math.min(least, (used.user + used.system) / N);
  }
  return least;
}

/** What the controller writes for `c`: the body and its Content-Type. */
async function answerOf(handler: Handler, c: Case): Promise<{ type: string; body: string }> {
  const chunks: Buffer[] = [];
  await once(handler, c, (chunk) => chunks.push(typeof chunk === 'string' ? Buffer.from(chunk, 'latin1') : chunk));
  const all = Buffer.concat(chunks).toString('latin1');
  return { type: /Content-Type: ([^\r]*)/.exec(all)![1], body: all.slice(all.indexOf('\r\n\r\n') + 4) };
}

async function main() {
  const started = await startController(undefined, { keysIni: realKeys(), ini: { server: { db_update: 'instant', keep_logmem: 86400 } } });
  try {
    // the handler the controller's node:http server runs for every request
    const server = (started.ctl.get(HttpServer) as unknown as { servers: http.Server[] }).servers[0];
    const controller = server.listeners('request')[0] as Handler;
    const rpc = { jsonrpc: '2.0', method: 'test', params: { k: Keys.master }, id: 1 };
    const cases: Case[] = [
      { name: 'JSON RPC / JSON', method: 'POST', url: '/jrpc', headers: { 'content-type': 'application/json' }, body: Buffer.from(JSON.stringify(rpc)) },
      { name: 'JSON RPC / MessagePack', method: 'POST', url: '/jrpc', headers: { 'content-type': 'application/msgpack' }, body: Buffer.from(encode(rpc)) },
      { name: 'direct GET /sys-api/test', method: 'GET', url: `/sys-api/test?k=${Keys.master}`, headers: {} },
      { name: 'direct POST /sys-api/test (JSON)', method: 'POST', url: '/sys-api/test', headers: { 'content-type': 'application/json' }, body: Buffer.from(JSON.stringify({ k: Keys.master })) },
    ];
    const rows: (string | number)[][] = [];
    for (const c of cases) {
      const { type, body } = await answerOf(controller, c);
      const head = ['Cache-Control', 'no-cache, no-store, must-revalidate', 'Expires', '0', 'Pragma', 'no-cache', 'Content-Type', type, 'Content-Length', String(body.length)];
      const drop = () => undefined;
      // bare-server.ts's handler
      const bare: Handler = (req, res) => {
        req.on('data', drop);
        req.on('end', () => {
          res.writeHead(200, head);
          res.end(body, 'latin1');
        });
      };
      const b = await cost(bare, c);
      const ctl = await cost(controller, c);
      rows.push([c.name, fmt(b, 2), fmt(ctl, 2), fmt(ctl - b, 2)]);
    }
    console.log(`\nAPI in process (node's request and response objects on a counting socket, four-key directory): CPU µs per request, the least of ${PASSES} passes of ${N}\n`);
    console.log(table(['call', 'bare node:http handler', 'controller', 'controller beyond bare'], rows));
  } finally {
    await started.stop();
    fs.rmSync(started.dir, { recursive: true, force: true });
  }
}

void main().then(() => process.exit(0), (err: unknown) => {
  console.error(err);
  process.exit(1);
});
