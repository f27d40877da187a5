import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import initSqlJs from 'sql.js';
import { HistoryFile } from '../../plugins/notifiers/db/store';
import { CheckpointPolicy } from '../../plugins/notifiers/db/policy';
import { HistorySchema, type HistoryRow } from '../../plugins/notifiers/db/schema';
import { DbIniSettings, DbLimits, DbSettings } from '../../plugins/notifiers/db';
import { defaults } from '../../core/schema';
import { writeFileAtomic } from '../../core/toolkit/atomic-file';
import type { HistoryOptions } from '../../plugins/notifiers/db/history';
import { table, fmt } from './lib';

/** the db notifier's defaults and limits, as a notifier file without them gets */
const DbDefaults = {
  ...defaults(DbLimits), max_size: DbSettings.max_size.default as number, flush_interval: DbSettings.flush_interval.default as number,
  max_write_mb_per_hour: DbIniSettings.max_write_mb_per_hour.default,
};


/**
 * Bytes a db notifier writes to disk per day, today's design (the whole file
 * rewritten every flush_interval, 5 s) beside the journaled one (rows
 * appended to a journal, the file rewritten by the write budget), at 10, 100
 * and 1,000 rows/s into histories of 100,000 and 1,000,000 rows.
 *
 * Bytes are counted at the file system calls: `wchar` of /proc/self/io (every
 * byte handed to write(2) by this process) around the real code
 * (plugins/notifiers/db/store.ts) writing real files. Measured: the bytes of
 * one checkpoint at each size, and the journal bytes of 10 s of rows at each
 * rate (batches as the host hands them over: what arrives in one commit
 * interval). A day
 * is then simulated second by second through the real checkpoint policy
 * (policy.ts) with the default budget. BENCH_HISTORY_SIZES=100000 runs one size.
 */
const SIZES = (process.env.BENCH_HISTORY_SIZES ?? '100000,1000000').split(',').map(Number);
const RATES = [10, 100, 1000];
const DAY = 86400;
const MEASURE_S = 10;
const PAGE = 4096;

function wchar(): number {
  const m = /^wchar:\s*(\d+)/m.exec(fs.readFileSync('/proc/self/io', 'utf8'));
  return Number(m![1]);
}

function rowsAt(from: number, count: number, t0: number): HistoryRow[] {
  return Array.from({ length: count }, (_, j) => {
    const i = from + j;
    return ['', t0 + i / 1000, `sensor:plant/area${i % 10}/s${i % 1000}`, 1, (20 + (i % 997) / 10).toFixed(3)];
  });
}

async function baseFile(file: string, size: number, t0: number): Promise<void> {
  const SQL = await initSqlJs();
  const db = new SQL.Database();
  db.run('PRAGMA auto_vacuum = INCREMENTAL');
  for (const sql of HistorySchema) db.run(sql);
  for (let i = 0; i < size; i += 10_000) {
    db.run('BEGIN');
    const st = db.prepare('INSERT INTO state_history VALUES (?, ?, ?, ?, ?)');
    for (const r of rowsAt(i, Math.min(10_000, size - i), t0)) st.run(r);
    st.free();
    db.run('COMMIT');
  }
  await writeFileAtomic(file, db.export());
  db.close();
}

const options = (file: string, size: number): HistoryOptions => ({
  file, space: '', keep: 10 * DAY, maxRows: size, maxBytes: DbDefaults.max_size, flushInterval: DbDefaults.flush_interval,
  flushPauseFactor: DbDefaults.flush_pause_factor, maxWriteBytesPerHour: DbDefaults.max_write_mb_per_hour * 1024 * 1024,
  journalShare: DbDefaults.journal_share, journalFloor: DbDefaults.journal_floor, commitInterval: DbDefaults.commit_interval,
  commitRows: DbDefaults.max_batch / 2, cleanInterval: 60, maxPending: 16,
});

interface Measured { checkpoint: number; checkpointS: number; journal: Map<number, { bytes: number; fsyncs: number }> }

/** Real writes of one design at one size. */
async function measure(dir: string, base: string, size: number, journaled: boolean, t0: number): Promise<Measured> {
  const file = path.join(dir, `${journaled ? 'journaled' : 'today'}-${size}.db`);
  fs.copyFileSync(base, file);
  const store = await HistoryFile.open(options(file, size), (m) => console.warn(m), t0, journaled);
  let next = size;
  try {
    store.write(rowsAt(next++, 1, t0));
    let w = wchar();
    const started = performance.now();
    await store.checkpoint(t0);
    const checkpointS = (performance.now() - started) / 1000;
    const checkpoint = wchar() - w;
    const journal = new Map<number, { bytes: number; fsyncs: number }>();
    for (const rate of RATES) {
      const batch = Math.max(1, Math.round(rate * DbDefaults.commit_interval));
      const batches = Math.ceil((rate * MEASURE_S) / batch);
      w = wchar();
      for (let b = 0; b < batches; b++) { store.write(rowsAt(next, batch, t0)); next += batch; }
      journal.set(rate, { bytes: (wchar() - w) / MEASURE_S, fsyncs: journaled ? batches / MEASURE_S : 0 });
    }
    return { checkpoint, checkpointS, journal };
  } finally {
    store.close();
    for (const f of fs.readdirSync(dir)) if (f.startsWith(path.basename(file))) fs.rmSync(path.join(dir, f));
  }
}

/** A simulated day: journal bytes each second, checkpoints when the policy says so. */
function day(m: Measured, rate: number, journaled: boolean): { bytes: number; checkpoints: number; pages: number; freshness: number } {
  const j = m.journal.get(rate)!;
  if (!journaled) {
    // every flush finds new rows at these rates; the next one starts max(flush_interval, 4 × its duration) after it ended
    const period = m.checkpointS + Math.max(DbDefaults.flush_interval, DbDefaults.flush_pause_factor * m.checkpointS);
    const checkpoints = Math.floor(DAY / period);
    return { bytes: checkpoints * m.checkpoint, checkpoints, pages: 0, freshness: period };
  }
  const o = options('', 0);
  const policy = new CheckpointPolicy({ minInterval: o.flushInterval, bytesPerHour: o.maxWriteBytesPerHour, journalShare: o.journalShare, journalFloor: o.journalFloor }, 0);
  let journal = 0;
  let written = 0;
  let checkpoints = 0;
  let last = 0;
  let longest = 0;
  for (let s = 1; s <= DAY; s++) {
    journal += j.bytes;
    written += j.bytes;
    if (policy.due(s, true, journal, written, m.checkpoint)) {
      policy.done(s, written);
      longest = Math.max(longest, s - last);
      last = s;
      checkpoints++;
      journal = 0;
    }
  }
  // a device writes whole pages: each journal fsync writes at least the pages its append touched
  const pages = j.fsyncs * DAY * Math.ceil(j.bytes / j.fsyncs / PAGE) * PAGE;
  return { bytes: written + checkpoints * m.checkpoint, checkpoints, pages, freshness: Math.max(longest, DAY - last) };
}

const gb = (b: number) => fmt(b / 1e9, 2);
const dur = (s: number) => (s >= 3600 ? `${fmt(s / 3600, 1)} h` : s >= 60 ? `${fmt(s / 60, 1)} min` : `${fmt(s)} s`);

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-hwrites-'));
  const rows: (string | number)[][] = [];
  let target = '';
  try {
    for (const size of SIZES) {
      const t0 = Date.now() / 1000 - size / 1000;
      const base = path.join(dir, `base-${size}.db`);
      console.error(`building a history of ${size} rows`);
      await baseFile(base, size, t0);
      const today = await measure(dir, base, size, false, t0);
      const journaled = await measure(dir, base, size, true, t0);
      fs.rmSync(base);
      for (const rate of RATES) {
        const a = day(today, rate, false);
        const b = day(journaled, rate, true);
        rows.push([
          size, rate, fmt(today.checkpoint / 1e6, 1), `${gb(a.bytes)} (every ${fmt(a.freshness, 1)} s)`, gb(b.bytes), fmt(a.bytes / b.bytes, 0), b.checkpoints,
          dur(b.freshness), fmt(journaled.journal.get(rate)!.bytes / rate, 0), gb(b.pages + b.checkpoints * journaled.checkpoint),
        ]);
        if (size === 1_000_000 && rate === 100) target = `target: 100 rows/s into 1,000,000 rows ≤ 2 GB/day: ${gb(b.bytes)} GB/day ${b.bytes <= 2e9 ? 'met' : 'NOT met'}`;
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  console.log(`bytes written per day (write(2) calls, /proc/self/io wchar); default budget ${DbDefaults.max_write_mb_per_hour} MB/h, flush_interval ${DbDefaults.flush_interval} s\n`);
  console.log(table([
    'rows', 'rows/s', 'file MB', 'today GB/day', 'journaled GB/day', 'ratio', 'checkpoints/day', 'file staleness, longest',
    'journal bytes/row', 'journaled, journal counted in whole 4 KiB pages per fsync, GB/day',
  ], rows));
  if (target) console.log(`\n${target}`);
}

main().then(() => process.exit(0), (err) => { console.error(err); process.exit(1); });
