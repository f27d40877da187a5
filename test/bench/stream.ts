import 'reflect-metadata';
import fs from 'node:fs';
import os from 'node:os';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { startController, Keys } from '../helpers/controller';
import { STATS_PLUGIN } from '../helpers/stream-client';
import { table, fmt, benchUpdatePlugin } from './lib';

/**
 * Event stream throughput.
 *
 *   node dist/test/bench/stream.js
 *
 * State events per second from the items service's `update` through the
 * stream (/ws: key rights, notifier filters, the send bound) to BENCH_STREAM_CLIENTS
 * ws clients (default 1,10,50), beside a raw loop: a bare `ws` server on
 * node:http sending the same frames (one serialization per event for all
 * clients, yielding every 1000 events as the update loop does) to the same
 * number of clients. Clients and servers share this process in both runs.
 * BENCH_STREAM_N sets the events per run (default 20000).
 */
const N = Number(process.env.BENCH_STREAM_N ?? 20_000);
const CLIENTS = (process.env.BENCH_STREAM_CLIENTS ?? '1,10,50').split(',').map(Number);
const OID = 'sensor:bench/s';
const WAIT_MS = 300_000;

const now = () => performance.now();
const step = (what: string) => process.stderr.write(`… ${what}\n`);

/** `count` clients that count the state events they receive; `all(n)` resolves when every one has n more. */
function counters(sockets: WebSocket[]) {
  const got = sockets.map(() => 0);
  let waiting: { want: number; resolve: (at: number) => void } | undefined;
  const check = () => { if (waiting && got.every((g) => g >= waiting!.want)) { waiting.resolve(now()); waiting = undefined; } };
  sockets.forEach((ws, i) => ws.on('message', (data) => {
    const m = JSON.parse(data.toString());
    if (m.s === 'state') { got[i] += m.d.length; check(); }
  }));
  return {
    all(n: number): Promise<number> {
      got.fill(0);
      return withTimeout(new Promise((resolve) => { waiting = { want: n, resolve }; }), `${n} events to ${sockets.length} clients`);
    },
  };
}

function withTimeout<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<T>((_, rej) => { timer = setTimeout(() => rej(new Error(`${what} did not all arrive`)), WAIT_MS); })])
    .finally(() => clearTimeout(timer));
}

const open = (url: string) => new Promise<WebSocket>((resolve, reject) => {
  const ws = new WebSocket(url);
  ws.once('open', () => resolve(ws));
  ws.once('error', reject);
});

/** A frame as the stream sends it. */
function frame(i: number): string {
  return JSON.stringify({ s: 'state', d: [{ oid: OID, full_id: 'bench/s', group: 'bench', id: 's', type: 'sensor', status: 1, value: String(i), t: Date.now() / 1000 }] });
}

/** The raw loop: a bare ws server sending N frames to `count` clients; events/s. */
async function raw(count: number): Promise<number> {
  const server = http.createServer();
  const wss = new WebSocketServer({ server });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const sockets: WebSocket[] = [];
  try {
    for (let i = 0; i < count; i++) sockets.push(await open(url));
    while (wss.clients.size < count) await new Promise((r) => setImmediate(r));
    const c = counters(sockets);
    const send = async () => {
      for (let i = 1; i <= N; i++) {
        const text = frame(i);
        for (const ws of wss.clients) ws.send(text);
        if (i % 1000 === 0) await new Promise((r) => setImmediate(r));
      }
    };
    let done = c.all(N);
    await send(); // warm-up, as the controller's start and create warm its side
    await done;
    done = c.all(N);
    const start = now();
    await send();
    return N / ((await done) - start) * 1000;
  } finally {
    for (const ws of sockets) ws.terminate();
    wss.close();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
}

/** The controller: `count` stream clients subscribed to state, N updates by bench_update; events/s and the stream's figures. */
async function controller(count: number): Promise<{ rate: number; dropped: number }> {
  const c = await startController(undefined, {
    // a buffer big enough that no client is dropped: the bench measures delivery, the tests measure the bound
    ini: { webapi: { ws_max_buffer: 1024 * 1024 * 1024, ws_max_clients: count + 10 } },
    files: { 'plugins/bench-stream.js': benchUpdatePlugin(OID), 'plugins/streamprobe.js': STATS_PLUGIN },
  });
  const k = Keys.master;
  const sockets: WebSocket[] = [];
  try {
    await c.client.ok('create', { k, i: OID });
    for (let i = 0; i < count; i++) {
      const ws = await open(`${c.url.replace('http', 'ws')}/ws`);
      sockets.push(ws);
      const ready = new Promise<void>((resolve, reject) => {
        const on = (data: WebSocket.RawData) => {
          const m = JSON.parse(data.toString());
          if (m.s === 'state') { ws.off('message', on); resolve(); } // the current state, sent after subscribed
          if (m.s === 'error') reject(new Error(m.message));
        };
        ws.on('message', on);
      });
      ws.send(JSON.stringify({ m: 'auth', k }));
      ws.send(JSON.stringify({ m: 'subscribe', events: [{ subject: 'state', types: ['#'], groups: ['#'] }] }));
      await ready;
    }
    const cs = counters(sockets);
    let done = cs.all(N);
    await c.client.ok('bench_update', { k, n: N }); // warm-up
    await done;
    done = cs.all(N);
    const start = now();
    await c.client.ok('bench_update', { k, n: N });
    const rate = N / ((await done) - start) * 1000;
    const stats = await c.client.ok('stream_stats', { k });
    return { rate, dropped: stats.dropped_slow };
  } finally {
    for (const ws of sockets) ws.terminate();
    await c.stop();
    fs.rmSync(c.dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  console.log(`state events through the event stream, ${N} per run, ${os.cpus().length} CPUs\n`);
  const rows: (string | number)[][] = [];
  for (const count of CLIENTS) {
    step(`${count} clients: raw ws loop`);
    const r = await raw(count);
    step(`${count} clients: controller /ws`);
    const s = await controller(count);
    if (s.dropped) throw new Error(`${s.dropped} stream clients were dropped as too slow`);
    rows.push([count, fmt(r), fmt(s.rate), fmt(s.rate / r, 2), fmt(s.rate * count)]);
  }
  console.log(table(['clients', 'raw ws loop events/s', 'controller /ws events/s', 'ratio', 'controller messages/s (all clients)'], rows));
}

main().then(() => process.exit(0), (err) => { console.error(err); process.exit(1); });
