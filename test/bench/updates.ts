import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { wrkLoad, startChild, stopChild, table, fmt, cpuSeconds } from './lib';
import { makeDir, Keys, MAIN } from '../helpers/controller';

/**
 * Cost of one `update` that must not grow with size: JSON RPC `update` of one
 * sensor (a new value each call, so each makes a state event), on
 * controllers that differ in one thing each:
 *
 *   base        1 json notifier subscribed to the sensor, 10 items
 *   50 subscribed   50 json notifiers subscribed to it, 10 items
 *   50 configured   50 json notifiers, 1 of them subscribed to it (the others to other items), 10 items
 *   10,000 items    1 json notifier subscribed to it, 10,000 items
 *
 * first under db_update = manual, so that the items file stays out of the
 * figure, then the base and 10,000 items again under db_update = instant
 * (each update answered once on disk: the changed item appended to the
 * items journal, the file folded now and then), each against its own base.
 *
 * The notifiers post to one receiver on loopback (in this process). wrk,
 * one thread, 32 keep-alive connections, the controllers alternating over
 * ROUNDS rounds of SECONDS; medians of req/s and of the controller's CPU µs
 * per call (user + system from /proc/<pid>/stat over the round, delivery
 * included).
 *
 * Then part 2 (below, `batches`): `update` in JSON RPC batches under
 * manual and instant.
 *
 *   node dist/test/bench/updates.js           (BENCH_UPDATES=batches: part 2 only)
 */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const OID = 'sensor:bench/s0';
/** `batches` runs only the second part (the JSON RPC batches) */
const ONLY = process.env.BENCH_UPDATES ?? '';
const BATCHES = 10;
const BATCH = 1000;

/** A json receiver: answers OK, counts the state events it got. */
async function receiver() {
  let events = 0;
  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (d: Buffer) => parts.push(d));
    req.on('end', () => {
      const frame = JSON.parse(Buffer.concat(parts).toString('utf8')) as { subject: string; data?: unknown[] };
      if (frame.subject === 'state') events += frame.data?.length ?? 0;
      res.setHeader('Content-Type', 'application/json');
      res.end('{"result":"OK"}');
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    uri: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    events: () => events,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

/** runtime/uc_items.json with `n` sensors, s0 … s<n-1>. */
function itemsFile(n: number): string {
  const items: Record<string, object> = {};
  for (let i = 0; i < n; i++) {
    items[`sensor:bench/s${i}`] = { status: 1, value: '0', t: Date.now() / 1000, mqtt_update: '', mqtt_control: '', action_enabled: true, action_timeout: null };
  }
  return JSON.stringify({ version: 1, items });
}

interface Setup { name: string; notifiers: number; subscribed: number; items: number; db: 'manual' | 'instant' }

async function controller(s: Setup, uri: string) {
  const files: Record<string, string> = { 'runtime/uc_items.json': itemsFile(s.items) };
  for (let i = 0; i < s.notifiers; i++) {
    // subscribed to the sensor, or to an item of its own that never changes
    const item = i < s.subscribed ? OID : `sensor:other/o${i}`;
    files[`runtime/uc_notify.d/n${i}.json`] = JSON.stringify({
      id: `n${i}`, type: 'json', uri, enabled: true, skip_test: true, events: [{ subject: 'state', items: [item] }],
    });
  }
  const dir = makeDir(undefined, {
    files,
    ini: { server: { db_update: s.db, log_file: path.join(os.tmpdir(), `bench-updates-${process.pid}.log`) } },
  });
  const ctl = await startChild(MAIN, ['--dir', dir]);
  return { ...s, ...ctl, dir, url: `http://127.0.0.1:${ctl.port}/jrpc` };
}

/** Each call sets a new value, so each makes a state event. */
const LUA = `n = 0
request = function()
  n = n + 1
  return wrk.format("POST", nil, nil, '{"jsonrpc":"2.0","method":"update","params":{"k":"${Keys.master}","i":"${OID}","s":1,"v":"' .. n .. '"},"id":1}')
end`;

/**
 * Part 2: `update` in JSON RPC batches, what a gateway or a script sending
 * readings in bulk does: BATCHES batches of BATCH calls, one after the other,
 * each call a new value of one of 10 sensors; updates/s from the first call
 * to the last answer (every answer of an instant controller comes after its
 * change is on disk).
 */
function batchBodies(round: number): string[] {
  return Array.from({ length: BATCHES }, (_, b) => JSON.stringify(Array.from({ length: BATCH }, (_, i) => ({
    jsonrpc: '2.0', method: 'update', id: i,
    params: { k: Keys.master, i: `sensor:bench/s${i % 10}`, s: 1, v: `${round}.${b}.${i}` },
  }))));
}

async function batchRate(url: string, round: number): Promise<number> {
  const bodies = batchBodies(round); // made before the clock starts
  const start = performance.now();
  for (const body of bodies) {
    const r = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
    const out = await r.json() as { error?: { message: string } }[];
    const failed = Array.isArray(out) ? out.find((x) => x.error) : out;
    if (failed) throw new Error(`batch: ${JSON.stringify(failed)}`);
  }
  return (BATCHES * BATCH) / ((performance.now() - start) / 1000);
}

async function batches(uri: string) {
  const setups: Setup[] = [
    { name: 'manual', notifiers: 1, subscribed: 1, items: 10, db: 'manual' },
    { name: 'instant (default)', notifiers: 1, subscribed: 1, items: 10, db: 'instant' },
  ];
  const ctls: Awaited<ReturnType<typeof controller>>[] = [];
  const rates = setups.map(() => [] as number[]);
  try {
    for (const s of setups) ctls.push(await controller(s, uri));
    // alternating, round 0 warms up
    for (let round = 0; round <= ROUNDS; round++) {
      for (const [i, c] of ctls.entries()) {
        const rate = await batchRate(c.url, round);
        await new Promise((r) => setTimeout(r, 300)); // the events of the last batch reach the receiver
        if (round > 0) rates[i].push(rate);
      }
    }
  } finally {
    for (const c of ctls) {
      await stopChild(c.proc);
      fs.rmSync(c.dir, { recursive: true, force: true });
    }
  }
  const med = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
  const manual = med(rates[0]);
  console.log(`\n\`update\` in JSON RPC batches: ${BATCHES} batches of ${BATCH} calls one after the other, 1 json notifier subscribed, 10 items; ${ROUNDS} alternating rounds, medians (all rounds: ${rates.map((r) => r.map((x) => fmt(x)).join(' ')).join(' | ')}); load average ${os.loadavg()[0].toFixed(1)}\n`);
  console.log(table(['db_update', 'updates/s', '÷ manual'], setups.map((s, i) => [s.name, fmt(med(rates[i])), fmt(med(rates[i]) / manual, 2)])));
}

async function main() {
  const rx = await receiver();
  if (ONLY === 'batches') {
    try { await batches(rx.uri); } finally { await rx.close(); }
    return;
  }
  const setups: Setup[] = [
    { name: '1 notifier subscribed, 10 items (base)', notifiers: 1, subscribed: 1, items: 10, db: 'manual' },
    { name: '50 notifiers subscribed, 10 items', notifiers: 50, subscribed: 50, items: 10, db: 'manual' },
    { name: '50 notifiers configured, 1 subscribed, 10 items', notifiers: 50, subscribed: 1, items: 10, db: 'manual' },
    { name: '1 notifier subscribed, 10,000 items', notifiers: 1, subscribed: 1, items: 10_000, db: 'manual' },
    { name: 'instant: 1 notifier subscribed, 10 items (base)', notifiers: 1, subscribed: 1, items: 10, db: 'instant' },
    { name: 'instant: 1 notifier subscribed, 10,000 items', notifiers: 1, subscribed: 1, items: 10_000, db: 'instant' },
  ];
  const ctls: Awaited<ReturnType<typeof controller>>[] = [];
  const rows: (string | number)[][] = [];
  try {
    for (const s of setups) ctls.push(await controller(s, rx.uri));
    const res = ctls.map(() => ({ rps: [] as number[], us: [] as number[], events: [] as number[] }));
    for (let round = 0; round <= ROUNDS; round++) {
      for (const [i, c] of ctls.entries()) {
        const seconds = round === 0 ? 1 : SECONDS; // round 0 warms up
        const before = cpuSeconds(c.proc.pid!);
        const got = rx.events();
        const l = await wrkLoad({ url: c.url, method: 'POST', headers: { 'Content-Type': 'application/json' }, lua: LUA, seconds });
        if (l.errors) throw new Error(`${c.name}: ${l.errors} errors`);
        await new Promise((r) => setTimeout(r, 300)); // the last batches reach the receiver (their CPU counts)
        if (round === 0) continue;
        const calls = l.rps * seconds;
        res[i].rps.push(l.rps);
        res[i].us.push(((cpuSeconds(c.proc.pid!) - before) / calls) * 1e6);
        res[i].events.push((rx.events() - got) / calls);
      }
    }
    const med = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
    for (const [i, s] of setups.entries()) {
      const base = med(res[setups.findIndex((b) => b.db === s.db)].us); // the first of the same db_update
      rows.push([s.name, fmt(med(res[i].rps)), fmt(med(res[i].us), 1), fmt(med(res[i].us) / base, 2), fmt(med(res[i].events), 1)]);
    }
  } finally {
    for (const c of ctls) {
      await stopChild(c.proc);
      fs.rmSync(c.dir, { recursive: true, force: true });
    }
  }
  console.log(`\n\`update\` cost by notifiers and items, JSON RPC, wrk (1 thread, 32 connections), ${ROUNDS} alternating rounds of ${SECONDS} s, medians; load average ${os.loadavg()[0].toFixed(1)}\n`);
  console.log(table(['controller', 'req/s', 'CPU µs/update (delivery included)', 'cost ÷ base', 'events delivered per update'], rows));
  try { await batches(rx.uri); } finally { await rx.close(); }
}

main().catch((err) => { console.error(err); process.exit(1); });
