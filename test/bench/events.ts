import 'reflect-metadata';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import initSqlJs from 'sql.js';
import { startController, Keys } from '../helpers/controller';
import { History } from '../../plugins/notifiers/db/history';
import { HistorySchema, type HistoryRow } from '../../plugins/notifiers/db/schema';
import { ROLLUP_TABLE } from '../../plugins/notifiers/db/rollup';
import { writeFileAtomic } from '../../core/toolkit/atomic-file';
import type { ModuleLogger } from '../../core/log';
import { table, fmt, benchUpdatePlugin, updateBatches, postBatches, jsonReceiver, benchStateEvent, rawJsonLoop } from './lib';

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
 * BENCH_EVENTS_N sets the events per run (default 20000).
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

async function main(): Promise<void> {
  console.log(`state events, ${N} per run, ${os.cpus().length} CPUs\n`);
  console.log(table(['path', 'raw loop, events/s', 'controller, events/s', 'ratio', 'requests / batches (raw / controller)'], await throughput()));
  console.log('\nhistory flush cost by size (ms; stall = longest pause of the main thread)\n');
  console.log(table(
    ['rows', 'file MB', 'export on main thread', 'atomic write (async)', 'longest main-thread stall, flush on main thread', 'flush in history thread', 'longest main-thread stall, flush in history thread'],
    await flushCost(),
  ));
}

main().then(() => process.exit(0), (err) => { console.error(err); process.exit(1); });
