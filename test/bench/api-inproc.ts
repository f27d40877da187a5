import fs from 'node:fs';
import http from 'node:http';
import { Decoder, encode } from '@msgpack/msgpack';
import { startController, Keys } from '../helpers/controller';
import { HttpServer } from '../../core/http/server';
import { Dispatcher, type CallMeta } from '../../core/dispatch';
import { rpcCall } from '../../core/rpc';
import { Call } from '../../core/call';
import { encodeResponse } from '../../core/http/encode';
import { table, fmt, realKeys } from './lib';
import { connect, requestOf, type Case } from './inproc';

/**
 * The API's own cost per call, in process: a `test` request's bytes are
 * pushed into a connection of the controller's own node:http server, whose
 * parser makes the request as it does for a socket, and the answer is
 * written to that connection, which only counts it; then the same through a
 * bare node:http server answering the same bytes. No kernel, no load
 * generator, nothing else on the CPUs between the two: what is left is what
 * a call costs beyond bare node:http, which moves by ±0.3 µs between runs
 * where the HTTP benchmark (api.ts) moves by ±1.5 µs. It says where a
 * change's microseconds went, not the ratio to bare node:http (the kernel's
 * loopback and the socket's writes are not in it): that is api.ts's.
 * BENCH_INPROC_N requests per pass (30,000), the least of
 * BENCH_INPROC_PASSES passes (5).
 *
 * Through node's parser, not request objects made by hand: headers set by
 * hand had a shape of their own each time, which made every header lookup
 * of the controller cost 0.1–0.2 µs (test/bench/README.md).
 */
const N = Number(process.env.BENCH_INPROC_N ?? 30_000);
const PASSES = Number(process.env.BENCH_INPROC_PASSES ?? 5);

/** CPU µs per run of `step`: the least of PASSES passes of N after a warm-up. */
async function leastCost(step: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 20_000; i++) await step();
  let least = Infinity;
  for (let p = 0; p < PASSES; p++) {
    const before = process.cpuUsage();
    for (let i = 0; i < N; i++) await step();
    const used = process.cpuUsage(before);
    least = Math.min(least, (used.user + used.system) / N);
  }
  return least;
}

/** CPU µs per request of `server`. */
function cost(server: http.Server, c: Case): Promise<number> {
  const conn = connect(server);
  const request = requestOf(c);
  return leastCost(() => conn.send(request));
}

/** What the controller answers to `c`: the body and its Content-Type. */
async function answerOf(server: http.Server, c: Case): Promise<{ type: string; body: string }> {
  const conn = connect(server);
  await conn.send(requestOf(c));
  const all = conn.answer().toString('latin1');
  return { type: /Content-Type: ([^\r]*)/.exec(all)![1], body: all.slice(all.indexOf('\r\n\r\n') + 4) };
}

/**
 * Where a call's time goes, layer by layer, in process and without HTTP:
 * each step awaited in a loop (the first row is the loop alone), CPU µs a
 * call, the least of PASSES passes of N. A hot loop keeps every layer's code
 * and data in the CPU's caches, which a call through HTTP does not find
 * there: these are the layers' sizes against each other, not their share
 * of a call through HTTP.
 */
async function layers(dispatcher: Dispatcher): Promise<(string | number)[][]> {
  const k = Keys.master;
  const headers = { host: '127.0.0.1:8812', 'content-type': 'application/msgpack' };
  const meta = (): CallMeta => ({ ip: '127.0.0.1', transport: 'jrpc', headers, assign: true });
  const request = () => ({ jsonrpc: '2.0', method: 'test', params: { k }, id: 1 });
  const packed = Buffer.from(encode(request()));
  const json = Buffer.from(JSON.stringify(request()));
  const decoder = new Decoder({ useBigInt64: true });
  /** the call of `payload`, its answer encoded as /jrpc does: the transport's call object, its kept answer encoded once */
  const answered = async (isPacked: boolean, payload: unknown) => {
    const call = new Call(meta(), isPacked ? 'msgpack' : 'json');
    return encodeResponse(isPacked, (await rpcCall(dispatcher, payload, call))!, 1e9, call.kept);
  };
  const steps: [string, () => Promise<unknown>][] = [
    ['the loop alone (an awaited empty step)', async () => undefined],
    ['MessagePack request decoded', async () => decoder.decode(packed)],
    ['JSON request parsed', async () => JSON.parse(json.toString('utf8'))],
    ['the key found (Dispatcher.identify: SHA-256, map, hosts_allow)', async () => dispatcher.identify(k, '127.0.0.1')],
    ['Dispatcher.call (key, checks, handler, metrics)', () => dispatcher.call('test', { k }, meta())],
    ['rpcCall (the JSON RPC request around it)', () => rpcCall(dispatcher, request(), meta())],
    ['rpcCall, answer encoded (MessagePack)', () => answered(true, request())],
    ['rpcCall, answer encoded (JSON)', () => answered(false, request())],
    ['MessagePack: decoded, called, encoded', () => answered(true, decoder.decode(packed))],
    ['JSON: parsed, called, encoded', () => answered(false, JSON.parse(json.toString('utf8')))],
  ];
  const rows: (string | number)[][] = [];
  for (const [name, step] of steps) rows.push([name, fmt(await leastCost(step), 2)]);
  return rows;
}

async function main() {
  const started = await startController(undefined, { keysIni: realKeys(), ini: { server: { db_update: 'instant', keep_logmem: 86400 } } });
  try {
    const server = (started.ctl.get(HttpServer) as unknown as { servers: http.Server[] }).servers[0];
    const rpc = { jsonrpc: '2.0', method: 'test', params: { k: Keys.master }, id: 1 };
    const cases: Case[] = [
      { name: 'JSON RPC / JSON', method: 'POST', url: '/jrpc', headers: { 'Content-Type': 'application/json' }, body: Buffer.from(JSON.stringify(rpc)) },
      { name: 'JSON RPC / MessagePack', method: 'POST', url: '/jrpc', headers: { 'Content-Type': 'application/msgpack' }, body: Buffer.from(encode(rpc)) },
      { name: 'direct GET /sys-api/test', method: 'GET', url: `/sys-api/test?k=${Keys.master}`, headers: {} },
      { name: 'direct POST /sys-api/test (JSON)', method: 'POST', url: '/sys-api/test', headers: { 'Content-Type': 'application/json' }, body: Buffer.from(JSON.stringify({ k: Keys.master })) },
    ];
    const rows: (string | number)[][] = [];
    for (const c of cases) {
      const { type, body } = await answerOf(server, c);
      const head = ['Cache-Control', 'no-cache, no-store, must-revalidate', 'Expires', '0', 'Pragma', 'no-cache', 'Content-Type', type, 'Content-Length', String(body.length)];
      const drop = () => undefined;
      // bare-server.ts's handler
      const bare = http.createServer((req, res) => {
        req.on('data', drop);
        req.on('end', () => {
          res.writeHead(200, head);
          res.end(body, 'latin1');
        });
      });
      const b = await cost(bare, c);
      const ctl = await cost(server, c);
      rows.push([c.name, fmt(b, 2), fmt(ctl, 2), fmt(ctl - b, 2)]);
    }
    console.log(`\nAPI in process (request bytes through node's parser, answers to a counting connection, four-key directory): CPU µs per request, the least of ${PASSES} passes of ${N}\n`);
    console.log(table(['call', 'bare node:http handler', 'controller', 'controller beyond bare'], rows));
    const steps = await layers(started.ctl.get(Dispatcher));
    console.log(`\nThe call's layers in process, without HTTP (JSON RPC \`test\`, master key): CPU µs a call, the least of ${PASSES} passes of ${N}\n`);
    console.log(table(['step', 'CPU µs'], steps));
  } finally {
    await started.stop();
    fs.rmSync(started.dir, { recursive: true, force: true });
  }
}

void main().then(() => process.exit(0), (err: unknown) => {
  console.error(err);
  process.exit(1);
});
