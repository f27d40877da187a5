import 'reflect-metadata';
import fs from 'node:fs';
import path from 'node:path';
import { startController, Keys } from '../helpers/controller';
import { newSecret } from '../../plugins/notifiers/signature';
import { table, fmt, benchUpdatePlugin, favour, jsonReceiver, rawJsonLoop } from './lib';

/**
 * What durable and signed web hooks cost.
 *
 *   node dist/test/bench/webhooks.js
 *
 * 1. State events per second from `update` (a plugin calling the items
 *    service, at the defaults: db_update instant) through a json notifier to
 *    a receiver on loopback: kept in memory (durable false), durable (the
 *    outbox), durable and signed; beside a raw loop POSTing the same frames
 *    with fetch. The four alternate over BENCH_ROUNDS rounds (default 5)
 *    after a warm-up round; medians. Against in-memory: the median of each
 *    round's ratio (the two runs of a round are a second apart, so a load
 *    that comes and goes on a shared machine weighs on both), with its range.
 *    After the warm-up every thread of the process runs at nice -5 where
 *    allowed (lib.ts favour), as the other benches' servers do. With them: the CPU time of the process
 *    per event (controller, receiver and feeder all run in it: steadier than
 *    the rate on a shared machine), the outbox's fsyncs per second and bytes
 *    written per event.
 * 2. An hour's events at 100 events/s, at once: 360 000 events
 *    (BENCH_HOUR_EVENTS) into a durable notifier whose receiver never
 *    answers, fed as fast as they come; the outbox's journal size on disk
 *    after them, what it holds and what it dropped at its bound. The hour
 *    in wall time, sampled every minute, is webhooks-hour.ts.
 *
 * BENCH_WEBHOOK_N sets the events per run (default 20000).
 */
const N = Number(process.env.BENCH_WEBHOOK_N ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const HOUR = Number(process.env.BENCH_HOUR_EVENTS ?? 360_000);
const BATCH = 100; // the host's default max_batch
const WAIT_MS = 300_000;
const k = Keys.master;

const now = () => performance.now();
const step = (what: string) => process.stderr.write(`… ${what}\n`);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
/** CPU time of this process (controller, receiver and feeder: all in it) per event since `from`, in µs. */
const perEvent = (from: NodeJS.CpuUsage) => { const u = process.cpuUsage(from); return (u.user + u.system) / N; };


function within<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<T>((_, rej) => { timer = setTimeout(() => rej(new Error(`${what} did not all arrive`)), WAIT_MS); })])
    .finally(() => clearTimeout(timer));
}

async function throughput(): Promise<(string | number)[][]> {
  const rx = await jsonReceiver();
  const hook = (id: string, extra: Record<string, unknown>) => JSON.stringify({
    id, type: 'json', uri: rx.url, enabled: false, skip_test: true, queue_size: N + 1000, events: [{ subject: 'state', types: ['#'], groups: ['#'] }], ...extra,
  });
  const c = await startController(undefined, {
    files: {
      'plugins/bench-update.js': benchUpdatePlugin('sensor:bench/s'),
      'runtime/uc_notify.d/memory.json': hook('memory', { durable: false }),
      'runtime/uc_notify.d/durable.json': hook('durable', { durable: true }),
      'runtime/uc_notify.d/signed.json': hook('signed', { durable: true, signing_secret: newSecret() }),
    },
  });
  const kinds = ['memory', 'durable', 'signed'] as const;
  const rates = { raw: [] as number[], memory: [] as number[], durable: [] as number[], signed: [] as number[] };
  const cpu = { raw: [] as number[], memory: [] as number[], durable: [] as number[], signed: [] as number[] };
  const outbox = { fsyncsPerSecond: [] as number[], bytesPerEvent: [] as number[] };
  try {
    await c.client.ok('create', { k, i: 'sensor:bench/s' });
    for (let round = 0; round <= ROUNDS; round++) {
      step(`round ${round}`);
      // every thread of this process (the outbox's writes and fsyncs run in the thread pool, started by the warm-up) at a raised priority, where allowed
      if (round === 1) favour(process.pid);
      let done = rx.expect(N);
      let start = now();
      let cpu0 = process.cpuUsage();
      await rawJsonLoop(rx.url, N, BATCH);
      const raw = N / ((await done) - start) * 1000;
      if (round > 0) { rates.raw.push(raw); cpu.raw.push(perEvent(cpu0)); }
      for (const id of kinds) {
        await c.client.ok('enable_notifier', { k, i: id });
        const before = (await c.client.ok('get_notifier', { k, i: id })).stats.outbox;
        done = rx.expect(N);
        start = now();
        cpu0 = process.cpuUsage();
        await c.client.ok('bench_update', { k, n: N });
        const end = await within(done, id);
        const used = perEvent(cpu0);
        const seconds = (end - start) / 1000;
        const after = (await c.client.ok('get_notifier', { k, i: id })).stats.outbox;
        await c.client.ok('disable_notifier', { k, i: id });
        if (round === 0) continue;
        rates[id].push(N / seconds);
        cpu[id].push(used);
        if (id === 'durable' && before && after) {
          outbox.fsyncsPerSecond.push((after.fsyncs - before.fsyncs) / seconds);
          outbox.bytesPerEvent.push((after.written - before.written) / N);
        }
      }
    }
  } finally {
    await c.stop();
    await rx.close();
    fs.rmSync(c.dir, { recursive: true, force: true });
  }
  const raw = median(rates.raw);
  const mem = median(rates.memory);
  /** each round's rate against that round's in-memory one: median (and range) */
  const paired = (id: 'durable' | 'signed') => {
    const r = rates[id].map((x, i) => x / rates.memory[i]);
    return `${fmt(median(r), 2)} (${fmt(Math.min(...r), 2)}–${fmt(Math.max(...r), 2)})`;
  };
  const us = (id: keyof typeof cpu) => fmt(median(cpu[id]), 1);
  return [
    ['raw POST loop (fetch, same frames)', fmt(raw), '', '', us('raw')],
    ['json notifier in memory (durable false)', fmt(mem), fmt(mem / raw, 2), '1.00', us('memory')],
    ['json notifier, durable (the default)', fmt(median(rates.durable)), fmt(median(rates.durable) / raw, 2), paired('durable'), us('durable')],
    ['json notifier, durable and signed', fmt(median(rates.signed)), fmt(median(rates.signed) / raw, 2), paired('signed'), us('signed')],
    ['durable: outbox fsyncs per second', fmt(median(outbox.fsyncsPerSecond)), '', '', ''],
    ['durable: outbox bytes written per event', fmt(median(outbox.bytesPerEvent)), '', '', ''],
  ];
}

/** Journal bytes of one notifier's outbox on disk. */
function journalBytes(dir: string, id: string): number {
  const box = path.join(dir, 'runtime', 'outbox');
  return fs.readdirSync(box).filter((f) => f.startsWith(`${id}.journal.`)).reduce((n, f) => n + fs.statSync(path.join(box, f)).size, 0);
}

async function deadHour(): Promise<(string | number)[][]> {
  const c = await startController(undefined, {
    files: {
      'plugins/bench-update.js': benchUpdatePlugin('sensor:bench/s'),
      'runtime/uc_notify.d/away.json': JSON.stringify({
        id: 'away', type: 'json', uri: 'http://127.0.0.1:9/never', enabled: true, skip_test: true,
        retries: 1_000_000, retry_delay: 1, retry_max_delay: 30, events: [{ subject: 'state', types: ['#'], groups: ['#'] }],
      }),
    },
  });
  try {
    await c.client.ok('create', { k, i: 'sensor:bench/s' });
    step(`${HOUR} events into a notifier whose receiver is away`);
    const start = now();
    for (let i = 0; i < HOUR; i += 20_000) await c.client.ok('bench_update', { k, n: Math.min(20_000, HOUR - i) });
    const o = await within((async () => {
      for (;;) {
        const s = (await c.client.ok('get_notifier', { k, i: 'away' })).stats;
        if (s.outbox.held + s.dropped >= HOUR - 100) return s;
        await new Promise((r) => setTimeout(r, 200));
      }
    })(), 'outbox');
    const seconds = (now() - start) / 1000;
    const disk = journalBytes(c.dir, 'away');
    return [[
      `${HOUR} events, receiver away`, fmt(seconds, 1), String(o.outbox.held), String(o.dropped), `${fmt(disk / 1024 / 1024, 1)} MiB`, `${fmt(o.queued_bytes / 1024 / 1024, 1)} MiB`,
    ]];
  } finally {
    await c.stop();
    fs.rmSync(c.dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  console.log(`### Durable and signed web hooks: ${N} updates per run, median of ${ROUNDS} rounds, db_update instant\n`);
  console.log(table(['path', 'events/s', 'of raw', 'of in-memory (rounds)', 'CPU µs/event'], await throughput()));
  console.log(`\n### An hour's events at 100 events/s, fed at once, receiver away (the wall-clock hour: webhooks-hour)\n`);
  console.log(table(['load', 'seconds to feed', 'held in the outbox', 'dropped at the bound', 'journal on disk', 'queue bytes (estimate)'], await deadHour()));
}

main().then(() => process.exit(0), (err) => { console.error(err); process.exit(1); });
