import 'reflect-metadata';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import initSqlJs from 'sql.js';
import { startController, makeDir, spawnListening, MAIN, Keys, type Child } from '../helpers/controller';
import { startBroker } from '../helpers/broker';
import { influxUnavailable, startInflux } from '../helpers/influxdb';
import { History } from '../../plugins/notifiers/db/history';
import { HistorySchema, type HistoryRow } from '../../plugins/notifiers/db/schema';
import { ROLLUP_TABLE } from '../../plugins/notifiers/db/rollup';
import { writeFileAtomic } from '../../core/toolkit/atomic-file';
import type { ModuleLogger } from '../../core/log';
import { table, fmt, benchUpdatePlugin, updateBatches, postBatches, jsonReceiver, benchStateEvent, rawJsonLoop, cpuSeconds, realKeys, rangeOf } from './lib';

/**
 * Notification throughput and db flush cost.
 *
 *   node dist/test/bench/events.js
 *
 * 1. State events per second from the items service's `update` through a json
 *    notifier to a receiver on loopback, and through the db notifier (until
 *    the history holds them, journaled), beside raw loops doing the same I/O
 *    without the controller: the same JSON frames POSTed with fetch in
 *    batches of the same size; the same rows journaled (same bytes, one
 *    fdatasync a batch) and inserted into the same sql.js tables in batches
 *    of the same size. The json path also with the updates from outside:
 *    JSON RPC batches of 1 000 `update` calls one after the other, under
 *    db_update manual and at the defaults (instant: each batch answered once
 *    its changes are on disk). Raw loop and notifier alternate over
 *    BENCH_ROUNDS rounds (default 3) after a warm-up round; medians.
 * 2. What a flush costs as the history grows (BENCH_DB_SIZES rows, default
 *    10000,100000,1000000): export and atomic write on the main thread (what a
 *    design without a worker would stall the controller for), against a flush
 *    in the history thread, with the main thread's longest stall meanwhile.
 *
 * 3. What each notifier type costs on the defaults (db_update instant, the
 *    four-key directory of the api bench): a controller in a process of its
 *    own, started afresh every round, takes BENCH_EVENTS_N `update`s in JSON
 *    RPC batches of 1 000 with no notifier, then (another fresh one) with one
 *    notifier of the type; updates/s (the call to the last event sent), the
 *    controller's CPU per update without a notifier, and the notifier's CPU
 *    per event (with minus without, both read 700 ms after the last event so
 *    that an outbox's late write of its dones counts). Types alternate over
 *    BENCH_COST_ROUNDS rounds (default 5) after a warm-up; medians, spreads.
 *    A durable web hook's fsyncs (its outbox's count) per second and per event.
 *
 * BENCH_EVENTS_N sets the events per run (default 20000); BENCH_EVENTS_PART
 * (throughput, flush, cost; default all) runs some parts only;
 * BENCH_COST_TYPES (words of the names) some notifier types only;
 * BENCH_EVENTS_OTHER=<dist/core/main.js> runs every type on another build too.
 */
const N = Number(process.env.BENCH_EVENTS_N ?? 20_000);
const SIZES = (process.env.BENCH_DB_SIZES ?? '10000,100000,1000000').split(',').filter(Boolean).map(Number);
const JSON_BATCH = 100; // the host's default max_batch
const DB_BATCH = 1000; // the db type's maxBatch
const WAIT_MS = Number(process.env.BENCH_WAIT_MS ?? 300_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

const now = () => performance.now();
/** Progress on standard error, so the table on standard output stays clean. */
const step = (what: string) => process.stderr.write(`… ${what}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const BENCH_PLUGIN = benchUpdatePlugin('sensor:bench/s');


/**
 * The raw db loop: what the notifier stores, done without the controller on
 * this thread: per batch of the same size, the rows appended to a journal
 * file as the notifier's journal frames them (length, CRC-32, the rows as
 * JSON) and fdatasync'd, then in one sql.js transaction into the same tables
 * (INSERT OR REPLACE of the rows; the per-minute rollup, one upsert per
 * minute of the batch).
 */
async function rawDb(dir: string): Promise<void> {
  const SQL = await initSqlJs();
  const db = new SQL.Database();
  for (const sql of HistorySchema) db.run(sql);
  db.run(ROLLUP_TABLE);
  const fd = fs.openSync(path.join(dir, 'raw.journal'), 'w');
  try {
    for (let i = 0; i < N; i += DB_BATCH) {
      const rows: HistoryRow[] = [];
      for (let j = i; j < Math.min(i + DB_BATCH, N); j++) {
        const e = benchStateEvent(j + 1);
        rows.push(['', e.t, e.oid, e.status, e.value]);
      }
      const payload = Buffer.from(JSON.stringify(rows));
      const head = Buffer.alloc(8);
      head.writeUInt32LE(payload.length, 0);
      head.writeUInt32LE(zlib.crc32(payload), 4);
      fs.writeSync(fd, Buffer.concat([head, payload]));
      fs.fdatasyncSync(fd);
      db.run('BEGIN');
      // several updates in one millisecond share a key: the later state replaces the earlier, as in the history thread
      const st = db.prepare('INSERT OR REPLACE INTO state_history (space, t, oid, status, value) VALUES (?, ?, ?, ?, ?)');
      const minutes = new Map<number, { n: number; sum: number; last: HistoryRow }>();
      for (const r of rows) {
        st.run(r);
        const m = Math.trunc(r[1] / 60) * 60;
        const c = minutes.get(m) ?? { n: 0, sum: 0, last: r };
        c.n++;
        c.sum += Number(r[4]);
        c.last = r;
        minutes.set(m, c);
      }
      st.free();
      const up = db.prepare(`INSERT INTO state_history_minute VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (space, oid, m) DO UPDATE SET
        n = n + excluded.n, n_status = n_status + excluded.n_status, sum_status = sum_status + excluded.sum_status,
        n_value = n_value + excluded.n_value, sum_value = sum_value + excluded.sum_value,
        last_t = excluded.last_t, last_status = excluded.last_status, last_value = excluded.last_value`);
      for (const [m, c] of minutes) up.run(['', c.last[2], m, c.n, c.n, c.n, c.n, c.sum, c.last[1], c.last[3], c.last[4]]);
      up.free();
      db.run('COMMIT');
      await new Promise((r) => setImmediate(r)); // as the worker: other messages get their turn between batches
    }
  } finally {
    fs.closeSync(fd);
    db.close();
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function throughput(): Promise<(string | number)[][]> {
  const rx = await jsonReceiver();
  const common = { enabled: false, events: [{ subject: 'state', types: ['#'], groups: ['#'] }], queue_size: N + 1000 };
  const c = await startController(undefined, {
    // the items file stays out of the figure (under instant each change would rewrite it)
    ini: { server: { db_update: 'manual' } },
    files: {
      'plugins/bench-events.js': BENCH_PLUGIN,
      'runtime/uc_notify.d/hook.json': JSON.stringify({ id: 'hook', type: 'json', uri: rx.url, ...common }),
      'runtime/uc_notify.d/hist.json': JSON.stringify({ id: 'hist', type: 'db', db: 'history.db', max_batch: DB_BATCH, ...common }),
    },
  });
  // the same at the defaults (db_update instant): what a controller does as installed
  const d = await startController(undefined, {
    files: { 'runtime/uc_notify.d/hook.json': JSON.stringify({ id: 'hook', type: 'json', uri: rx.url, ...common }) },
  });
  const k = Keys.master;
  const rows: (string | number)[][] = [];
  const rawDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-rawdb-'));
  try {
    await c.client.ok('create', { k, i: 'sensor:bench/s' });
    await d.client.ok('create', { k, i: 'sensor:bench/s' });
    /** Events/s through a controller's json notifier while `run` makes the updates. */
    const viaHook = async (ctl: typeof c, run: () => Promise<unknown>) => {
      await ctl.client.ok('enable_notifier', { k, i: 'hook' });
      const done = rx.expect(N);
      const start = now();
      await run();
      const rate = N / ((await withTimeout(done, 'json events')) - start) * 1000;
      await ctl.client.ok('disable_notifier', { k, i: 'hook' });
      return rate;
    };
    const jrpc = { manual: [] as number[], instant: [] as number[] };

    // json: raw loop and notifier alternating, ROUNDS times after one warm-up of each
    const json = { raw: [] as number[], ctl: [] as number[], rawFrames: 0, frames: 0 };
    for (let round = 0; round <= ROUNDS; round++) {
      step(`json: round ${round}`);
      let done = rx.expect(N);
      let start = now();
      await rawJsonLoop(rx.url, N, JSON_BATCH);
      const raw = N / ((await done) - start) * 1000;
      json.rawFrames = rx.frames();
      await c.client.ok('enable_notifier', { k, i: 'hook' });
      done = rx.expect(N);
      start = now();
      await c.client.ok('bench_update', { k, n: N });
      const ctl = N / ((await withTimeout(done, 'json events')) - start) * 1000;
      json.frames = rx.frames();
      await c.client.ok('disable_notifier', { k, i: 'hook' });
      // the updates from outside: JSON RPC batches of 1 000 `update`s, each answered once on disk under instant
      const manual = updateBatches('sensor:bench/s', N, round, k);
      const instant = updateBatches('sensor:bench/s', N, round, k);
      const m = await viaHook(c, () => postBatches(c.url, manual));
      const i = await viaHook(d, () => postBatches(d.url, instant));
      if (round > 0) { json.raw.push(raw); json.ctl.push(ctl); jrpc.manual.push(m); jrpc.instant.push(i); }
    }
    const jsonRow = (name: string, ctl: number[], frames: string) => [name, fmt(median(json.raw)), fmt(median(ctl)), fmt(median(ctl) / median(json.raw), 2), frames];
    rows.push(jsonRow('json notifier → loopback receiver', json.ctl, `${json.rawFrames} / ${json.frames}`));
    rows.push(jsonRow('json notifier, `update` by JSON RPC batches of 1 000, db_update manual', jrpc.manual, ''));
    rows.push(jsonRow('json notifier, `update` by JSON RPC batches of 1 000, defaults (db_update instant)', jrpc.instant, ''));

    // db: until the history holds every event (journaled; in the file at the next checkpoint)
    const db = { raw: [] as number[], ctl: [] as number[], batches: 0 };
    await c.client.ok('enable_notifier', { k, i: 'hist' });
    const stats = async () => (await c.client.ok('get_notifier', { k, i: 'hist' })).stats ?? {};
    for (let round = 0; round <= ROUNDS; round++) {
      step(`db: round ${round}`);
      let start = now();
      await rawDb(rawDir);
      const raw = N / (now() - start) * 1000;
      const before = await stats();
      start = now();
      await c.client.ok('bench_update', { k, n: N });
      const end = Date.now() + WAIT_MS;
      let after = await stats();
      while (Number(after.received ?? 0) < Number(before.received ?? 0) + N) {
        if (Date.now() > end) throw new Error(`db events did not all arrive: ${JSON.stringify(after)}`);
        await sleep(5);
        after = await stats();
      }
      const ctl = N / (now() - start) * 1000;
      db.batches = Number(after.batches ?? 0) - Number(before.batches ?? 0);
      if (round > 0) { db.raw.push(raw); db.ctl.push(ctl); }
    }
    rows.push(['db notifier → history (sql.js, journaled)', fmt(median(db.raw)), fmt(median(db.ctl)), fmt(median(db.ctl) / median(db.raw), 2), `${Math.ceil(N / DB_BATCH)} / ${db.batches}`]);
  } finally {
    await c.stop();
    await d.stop();
    fs.rmSync(d.dir, { recursive: true, force: true });
    await rx.close();
    fs.rmSync(c.dir, { recursive: true, force: true });
    fs.rmSync(rawDir, { recursive: true, force: true });
  }
  return rows;
}

function withTimeout<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<T>((_, rej) => { timer = setTimeout(() => rej(new Error(`${what} did not all arrive`)), WAIT_MS); })])
    .finally(() => clearTimeout(timer));
}

/** Rows as a busy controller writes them: 1000 items, values like sensor readings. */
function historyRows(from: number, count: number, t0: number): HistoryRow[] {
  return Array.from({ length: count }, (_, j) => {
    const i = from + j;
    return ['', t0 + i / 1000, `sensor:plant/area${i % 10}/s${i % 1000}`, 1, (20 + (i % 997) / 10).toFixed(3)];
  });
}

/** The longest gap of a 1 ms ticker on this thread while `fn` runs: how long the thread could not serve anything. */
async function longestStall(fn: () => Promise<unknown> | unknown): Promise<number> {
  let last = now();
  let worst = 0;
  const tick = setInterval(() => { const t = now(); worst = Math.max(worst, t - last); last = t; }, 1);
  await sleep(20);
  worst = 0;
  last = now();
  await fn();
  await sleep(5);
  clearInterval(tick);
  return Math.max(worst, now() - last);
}

const quiet: ModuleLogger = { debug() {}, info() {}, warning: console.warn, error: console.error, critical: console.error, log() {} };

async function flushCost(): Promise<(string | number)[][]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-hist-'));
  const rows: (string | number)[][] = [];
  const SQL = await initSqlJs();
  try {
    for (const size of SIZES) {
      step(`flush cost: ${size} rows`);
      const t0 = Date.now() / 1000 - size / 1000;
      // the main thread doing it all: stall = export + write
      const db = new SQL.Database();
      for (const sql of HistorySchema) db.run(sql);
      for (let i = 0; i < size; i += 10_000) {
        db.run('BEGIN');
        const st = db.prepare('INSERT INTO state_history VALUES (?, ?, ?, ?, ?)');
        for (const r of historyRows(i, Math.min(10_000, size - i), t0)) st.run(r);
        st.free();
        db.run('COMMIT');
      }
      let a = 0;
      let exportMs = 0;
      let writeMs = 0;
      const naiveStall = await longestStall(async () => {
        a = now();
        const bytes = db.export();
        exportMs = now() - a;
        a = now();
        await writeFileAtomic(path.join(dir, `main-${size}.db`), bytes);
        writeMs = now() - a;
      });
      db.close();
      fs.rmSync(path.join(dir, `main-${size}.db`));

      // the history thread: the same rows, then one flush while the main thread ticks
      const file = path.join(dir, `worker-${size}.db`);
      const h = new History({
        file, space: '', keep: 10 * 86400, maxRows: size + 2, maxBytes: 2 ** 40, flushInterval: 3600, flushPauseFactor: 4, cleanInterval: 3600, maxPending: 16,
        maxWriteBytesPerHour: 1e15, journalShare: 1e6, journalFloor: 2 ** 40, commitInterval: 0, commitRows: 1,
      }, quiet);
      for (let i = 0; i < size; i += 10_000) await h.write(historyRows(i, Math.min(10_000, size - i), t0));
      await h.flush(); // whatever the first scheduled flush did not take
      await h.write(historyRows(size, 1, t0)); // one new row: the flush measured below writes the whole file
      let flushMs = 0;
      const stall = await longestStall(async () => { a = now(); await h.flush(); flushMs = now() - a; });
      const workerExportMs = h.stats?.last_export_ms ?? 0;
      const fileMb = fs.statSync(file).size / 1e6;
      await h.stop();
      fs.rmSync(file);
      rows.push([size, fmt(fileMb, 1), fmt(exportMs), fmt(writeMs), fmt(naiveStall, 1), `${fmt(flushMs)} (export ${fmt(workerExportMs)})`, fmt(stall, 1)]);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

const COST_ROUNDS = Number(process.env.BENCH_COST_ROUNDS ?? 5);
const SETTLE_MS = 700; // past the outbox's DONE_DELAY_MS: its write of the dones counts

interface CostRun { rate: number; cpu: number; fsyncs?: number; secs: number; requests?: number }

/** One run on a fresh controller: N updates by JSON RPC batches; with `notifier`, until it has sent them all. */
async function costRun(notifier: Record<string, unknown> | undefined, tag: string, requests?: () => number, main = MAIN): Promise<CostRun> {
  const dir = makeDir(undefined, {
    keysIni: realKeys(),
    ini: { server: { db_update: 'instant', keep_logmem: 86400 } },
    files: notifier ? { [`runtime/uc_notify.d/${notifier.id as string}.json`]: JSON.stringify(notifier) } : {},
  });
  const prof = process.env.BENCH_PROFILE_DIR;
  let c: Child | undefined;
  try {
    // BENCH_PROFILE_DIR=<folder>: each controller writes a CPU profile there at its stop
    c = await spawnListening(undefined, [process.execPath, ...(prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : []), main, '--dir', dir], { timeoutMs: 120_000 });
    const k = Keys.master;
    const pid = c.proc.pid!;
    await c.client.ok('create', { k, i: 'sensor:bench/s' });
    type Stats = { sent?: number; outbox?: { fsyncs: number } };
    const stats = async (): Promise<Stats> => (notifier ? ((await c!.client.ok('get_notifier', { k, i: notifier.id })) as { stats: Stats }).stats : {});
    const sent = async (n: number) => {
      const end = Date.now() + WAIT_MS;
      for (;;) {
        const s = await stats();
        if (Number(s.sent ?? 0) >= n) return s;
        if (Date.now() > end) throw new Error(`${tag}: events not all sent: ${JSON.stringify(s)}`);
        await sleep(10);
      }
    };
    // a warm-up of a tenth (JIT, connections), then the measured run
    const warm = Math.max(1000, N / 10);
    await postBatches(c.url, updateBatches('sensor:bench/s', warm, `w${tag}`, k));
    if (notifier) await sent(warm);
    await sleep(SETTLE_MS);
    const before = await stats();
    const bodies = updateBatches('sensor:bench/s', N, tag, k);
    const cpu0 = cpuSeconds(pid);
    const req0 = requests?.();
    const start = now();
    await postBatches(c.url, bodies);
    if (notifier) await sent(warm + N);
    const secs = (now() - start) / 1000;
    await sleep(SETTLE_MS);
    const cpu = cpuSeconds(pid) - cpu0;
    const fsyncs = before.outbox ? ((await stats()).outbox?.fsyncs ?? 0) - before.outbox.fsyncs : undefined;
    return { rate: N / secs, cpu, fsyncs, secs, requests: req0 === undefined ? undefined : requests!() - req0 };
  } finally {
    if (c && c.proc.exitCode === null && c.proc.signalCode === null) {
      const exited = c.exited;
      c.proc.kill('SIGTERM');
      await exited;
    }
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function notifierCost(): Promise<(string | number)[][]> {
  const downs: (() => unknown)[] = [];
  const owner = { teardown: (fn: () => unknown) => downs.push(fn) };
  try {
    const rx = await jsonReceiver();
    downs.push(() => rx.close());
    const events = [{ subject: 'state', types: ['#'], groups: ['#'] }];
    const common = { enabled: true, events, queue_size: N + 1000 };
    const types: [string, Record<string, unknown>, string?][] = [
      ['json web hook (in memory)', { id: 'hook', type: 'json', uri: rx.url, durable: false, ...common }],
      ['json web hook, durable (the default)', { id: 'hook', type: 'json', uri: rx.url, ...common }],
      ['db (SQLite history)', { id: 'hist', type: 'db', db: 'runtime/db/hist.db', ...common }],
    ];
    const only = process.env.BENCH_COST_TYPES?.split(',');
    try {
      const broker = await startBroker(owner, { kind: 'mosquitto', mosquittoConf: ['max_queued_messages 0'] });
      for (const qos of [0, 1]) types.push([`mqtt QoS ${qos}`, { id: `q${qos}`, type: 'mqtt', host: broker.host, port: broker.port, space: 'ctl', qos, ...common }]);
    } catch (err) {
      step(`mqtt skipped: ${(err as Error).message}`);
    }
    const why = influxUnavailable();
    if (why) step(`influxdb skipped: ${why}`);
    else {
      const s = await startInflux(owner);
      await s.createDatabase('bench');
      types.push(['influxdb 1.x', { id: 'ifx', type: 'influxdb', uri: s.url, db: 'bench', ...common }]);
    }
    // BENCH_EVENTS_OTHER=<dist/core/main.js of another build>: every type on it too, alternating (before and after in one run)
    const other = process.env.BENCH_EVENTS_OTHER;
    const all = other ? types.flatMap((ty): typeof types => [ty, [`${ty[0]}, other build`, ty[1], other]]) : types;
    const chosen = all.filter(([name]) => !only || only.some((o) => name.includes(o)));
    const none: CostRun[] = [];
    const runs = new Map<string, CostRun[]>(chosen.map(([name]) => [name, []]));
    for (let round = 0; round <= COST_ROUNDS; round++) {
      // no notifier and each type alternate, each run on a controller started afresh; round 0 warms up
      step(`cost: round ${round}, no notifier`);
      const base = await costRun(undefined, `n${round}`);
      if (round > 0) none.push(base);
      for (const [name, cfg, main] of chosen) {
        step(`cost: round ${round}, ${name}`);
        const r = await costRun(cfg, `${cfg.id as string}${round}`, cfg.type === 'json' ? () => rx.frames() : undefined, main);
        step(`   ${fmt(r.rate)}/s, ${fmt(r.cpu / N * 1e6, 1)} µs/event (no notifier: ${fmt(base.rate)}/s, ${fmt(base.cpu / N * 1e6, 1)} µs)${r.fsyncs === undefined ? '' : `, ${r.fsyncs} fsyncs`}${r.requests === undefined ? '' : `, ${r.requests} requests`}`);
        if (round > 0) runs.get(name)!.push(r);
      }
    }
    const us = (r: CostRun) => r.cpu / N * 1e6;
    const baseUs = median(none.map(us));
    const rows: (string | number)[][] = [['none', `${fmt(median(none.map((r) => r.rate)))} (${rangeOf(none.map((r) => r.rate))})`, `${fmt(baseUs, 1)} (${rangeOf(none.map(us), 1)})`, '', '', '', '']];
    for (const [name, rs] of runs) {
      // the notifier's CPU per event: each round's run with it minus that round's run without
      const own = rs.map((r, i) => us(r) - us(none[i]));
      const ownUs = median(own);
      const f = rs[0].fsyncs === undefined ? '' : `${fmt(median(rs.map((r) => r.fsyncs! / r.secs)))}/s, ${fmt(median(rs.map((r) => r.fsyncs! / N * 1000)), 1)}`;
      const q = rs[0].requests === undefined ? '' : fmt(median(rs.map((r) => r.requests! / N * 1000)), 1);
      rows.push([name, `${fmt(median(rs.map((r) => r.rate)))} (${rangeOf(rs.map((r) => r.rate))})`, `${fmt(median(rs.map(us)), 1)} (${rangeOf(rs.map(us), 1)})`,
        `${fmt(ownUs, 1)} (${rangeOf(own, 1)})`, `${fmt(ownUs / baseUs, 2)} ${ownUs <= 0.25 * baseUs ? 'met' : 'not met'}`, q, f]);
    }
    return rows;
  } finally {
    for (const fn of downs.reverse()) await fn();
  }
}

async function main(): Promise<void> {
  const parts = (process.env.BENCH_EVENTS_PART ?? 'throughput,flush,cost').split(',');
  console.log(`state events, ${N} per run, ${os.cpus().length} CPUs\n`);
  if (parts.includes('throughput')) {
    console.log(table(['path', 'raw loop, events/s', 'controller, events/s', 'ratio', 'requests / batches (raw / controller)'], await throughput()));
  }
  if (parts.includes('flush')) {
    console.log('\nhistory flush cost by size (ms; stall = longest pause of the main thread)\n');
    console.log(table(
      ['rows', 'file MB', 'export on main thread', 'atomic write (async)', 'longest main-thread stall, flush on main thread', 'flush in history thread', 'longest main-thread stall, flush in history thread'],
      await flushCost(),
    ));
  }
  if (parts.includes('cost')) {
    console.log(`\nwhat each notifier costs, defaults, ${N} updates by JSON RPC batches of 1 000, medians of ${COST_ROUNDS} rounds (spread)\n`);
    console.log(table(
      ['notifier', 'updates/s', 'controller CPU µs per update', 'notifier CPU µs per event (with − without)', 'notifier / update CPU, target ≤ 0.25', 'requests per 1 000 events', 'outbox fsyncs: per s, per 1 000 events'],
      await notifierCost(),
    ));
  }
}

main().then(() => process.exit(0), (err) => { console.error(err); process.exit(1); });
