import 'reflect-metadata';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fork } from 'node:child_process';
import { Client } from 'undici';
import { table, fmt, rangeOf } from './lib';

/**
 * Where a json web hook's CPU per event goes, in process (no controller, no
 * API): the notifier host's Delivery with a json endpoint, in memory and
 * durable (the outbox in a temporary folder), takes state events 1 000 a
 * turn of the event loop (as a JSON RPC batch of `update`s makes them)
 * until BENCH_HOOK_N (default 20 000) are sent, after a warm-up of
 * BENCH_HOOK_WARM (default 4 000); BENCH_HOOK_BATCH sets max_batch (default
 * the notifier's). Each run is one of four sends:
 *
 *   queue   the endpoint returns at once: the queue, the batches, the outbox
 *   + JSON  the endpoint makes the frame's JSON and returns
 *   raw     the frame's JSON posted by a bare undici Client (no endpoint)
 *   + HTTP  the real endpoint, to a receiver in another process
 *
 * so the parts are the differences. CPU µs per event is this process's
 * user+system time over the run (and 700 ms after it, for an outbox's late
 * write of its dones) divided by the events; the events are made in the
 * run (about 0.3 µs each). BENCH_HOOK_ROUNDS rounds (default 5),
 * alternating; medians (spread). BENCH_HOOK_OTHER=<root of another built
 * checkout>: its notifier code too, each run in a process of its own.
 *
 *   node dist/test/bench/hook-parts.js
 */
const N = Number(process.env.BENCH_HOOK_N ?? 20_000);
const WARM = Number(process.env.BENCH_HOOK_WARM ?? 4000);
const BATCH = process.env.BENCH_HOOK_BATCH ? { max_batch: Number(process.env.BENCH_HOOK_BATCH) } : {};
const ROUNDS = Number(process.env.BENCH_HOOK_ROUNDS ?? 5);
const ROOT = path.resolve(__dirname, '../../..');

type Send = 'queue' | 'json' | 'raw' | 'http';

const event = (i: number) => ({
  oid: 'sensor:bench/s', full_id: 'bench/s', type: 'sensor', group: 'bench', id: 's', status: 1, value: String(20 + (i % 100) / 10),
  t: Date.now() / 1000, ieid: [1, i], connected: true, node: 'ctl', controller_id: 'uc/ctl',
});

const RECEIVER = `const http = require('node:http');
const s = http.createServer((req, res) => { req.on('data', () => {}); req.on('end', () => { res.setHeader('Content-Type', 'application/json'); res.end('{"result":"OK"}'); }); });
s.keepAliveTimeout = 60000;
s.listen(0, '127.0.0.1', () => process.send(s.address().port));`;

/** One run, in this process (a child of the bench): prints CPU µs per event. */
async function child(root: string, durable: boolean, send: Send): Promise<void> {
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { Delivery } = require(path.join(root, 'dist/plugins/notifiers/host/delivery.js')) as typeof import('../../plugins/notifiers/host/delivery');
  const { jsonType } = require(path.join(root, 'dist/plugins/notifiers/json/index.js')) as typeof import('../../plugins/notifiers/json');
  const { DeliveryDefaults } = require(path.join(root, 'dist/plugins/notifiers/host/defaults.js')) as typeof import('../../plugins/notifiers/host/defaults');
  /* eslint-enable @typescript-eslint/no-require-imports */
  const quiet = { debug() {}, info() {}, warning: console.warn, error: console.error, critical: console.error, log() {} };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-hook-'));
  const rxFile = path.join(dir, 'rx.js');
  fs.writeFileSync(rxFile, RECEIVER);
  const rx = fork(rxFile);
  try {
    const port = await new Promise<number>((r) => rx.once('message', (m) => r(Number(m))));
    const d = new Delivery('hook', { ...DeliveryDefaults, queue_size: 3 * (N + WARM), ...BATCH }, 10, quiet);
    if (durable) d.useOutbox({ outbox: path.join(dir, 'outbox/hook'), deadLetters: path.join(dir, 'dead.json'), maxAge: 0, writes: { hold() {}, held: false } as never });
    const real = jsonType.create!({ id: 'hook', type: 'json', uri: `http://127.0.0.1:${port}/hook`, events: [] } as never, undefined as never);
    // raw: the frame's JSON posted by a bare undici Client, the floor the real endpoint is held against
    const bare = new Client(`http://127.0.0.1:${port}`, { pipelining: 1 });
    const post = (body: string) => bare.request({ path: '/hook', method: 'POST', body, headers: { 'content-type': 'application/json' } }).then((r) => r.body.dump());
    d.run(send === 'http' ? real : {
      send: (subject: string, events: unknown[]) => {
        if (send === 'raw') return post(JSON.stringify({ subject, data: events }));
        if (send === 'json') JSON.stringify({ subject, data: events });
        return Promise.resolve();
      },
      stop() {},
      test: () => Promise.resolve(),
    } as never);
    const run = async (n: number, before: number) => {
      for (let i = 0; i < n; i += 1000) {
        for (let j = 0; j < 1000; j++) d.push('state', event(i + j));
        await new Promise((r) => setImmediate(r));
      }
      while (d.stats().sent < before + n) await new Promise((r) => setTimeout(r, 5));
    };
    await run(WARM, 0);
    await new Promise((r) => setTimeout(r, 700));
    const c0 = process.cpuUsage();
    await run(N, WARM);
    await new Promise((r) => setTimeout(r, 700));
    const c = process.cpuUsage(c0);
    process.stdout.write(`${(c.user + c.system) / N}\n`);
    await d.stop();
    await real.stop();
    await bare.close();
  } finally {
    rx.kill();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function runChild(root: string, durable: boolean, send: Send): Promise<number> {
  return new Promise((resolve, reject) => {
    const p = fork(__filename, ['--child', root, durable ? 'durable' : 'memory', send], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
    let out = '';
    p.stdout!.on('data', (d: Buffer) => { out += d.toString(); });
    p.on('exit', (code) => (code === 0 ? resolve(Number(out.trim())) : reject(new Error(`run ${root} ${send} exited ${code}`))));
  });
}

async function main(): Promise<void> {
  const builds: [string, string][] = [['this build', ROOT]];
  if (process.env.BENCH_HOOK_OTHER) builds.push(['other build', path.resolve(process.env.BENCH_HOOK_OTHER)]);
  const cases: [string, string, boolean, Send][] = [];
  for (const [name, root] of builds) {
    for (const durable of [false, true]) for (const send of ['queue', 'json', 'raw', 'http'] as Send[]) cases.push([name, root, durable, send]);
  }
  const results = new Map<string, number[]>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, root, durable, send] of cases) {
      const key = `${name}|${durable ? 'durable' : 'in memory'}|${send}`;
      const us = await runChild(root, durable, send);
      process.stderr.write(`… round ${round + 1}: ${key} ${fmt(us, 2)} µs/event\n`);
      results.set(key, [...(results.get(key) ?? []), us]);
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const rows = [...results].map(([key, xs]) => [...key.split('|'), `${fmt(median(xs), 2)} (${rangeOf(xs, 2)})`]);
  console.log(`\njson web hook parts, in process, ${N} events, medians of ${ROUNDS} rounds (spread), CPU µs per event\n`);
  console.log(table(['build', 'hook', 'send', 'CPU µs per event'], rows));
}

if (process.argv[2] === '--child') {
  child(process.argv[3], process.argv[4] === 'durable', process.argv[5] as Send).then(() => process.exit(0), (err) => { console.error(err); process.exit(1); });
} else {
  main().then(() => process.exit(0), (err) => { console.error(err); process.exit(1); });
}
