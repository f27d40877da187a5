import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { History, type HistoryOptions } from '../../plugins/notifiers/db/history';
import { Journal } from '../../core/toolkit/journal';
import type { HistoryRow } from '../../plugins/notifiers/db/schema';

/**
 * Stress of the sql.js history threads and the journal, for the crash that
 * once killed a test process with SIGSEGV (a history thread terminated from
 * outside while it ran WASM, or started while another was being torn down).
 * For STRESS_SECONDS (default 120) it runs, all at once:
 * - HISTORIES histories (default 4) that start, write, query, flush and stop
 *   in a loop, some stopped while their thread is still opening the file;
 * - CHURNS histories (default 4) that only start, write once and stop;
 * - histories whose file cannot be opened, retried at once (a thread that
 *   reports failure and ends itself, then a new one);
 * - a journal on the main thread: append, rotate, replay, drop;
 * - BURNERS busy threads (default 2) that keep both cores loaded.
 * Exit 0 with the counts, or a non-zero exit (a crash is a signal) on the
 * first failure. `node dist/test/stress/history.js` after a build.
 */
const SECONDS = Number(process.env.STRESS_SECONDS ?? 120);
const HISTORIES = Number(process.env.HISTORIES ?? 4);
const BURNERS = Number(process.env.BURNERS ?? 2);
const CHURNS = Number(process.env.CHURNS ?? 4);
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'stress-history-'));
const end = Date.now() + SECONDS * 1000;
const counts = { cycles: 0, rows: 0, queries: 0, stoppedOpening: 0, failedOpens: 0, journalRecords: 0, journalReplays: 0, churned: 0 };
const quiet = { info() {}, warning() {}, error(m: string) { process.stderr.write(`error: ${m}\n`); }, debug() {} } as never;

const options = (file: string): HistoryOptions => ({
  file, space: '', keep: 86400, maxRows: 200_000, maxBytes: 1 << 30, flushInterval: 0.05, flushPauseFactor: 1, cleanInterval: 1,
  maxPending: 64, maxWriteBytesPerHour: 1e15, journalShare: 0.5, journalFloor: 1 << 20, commitInterval: 0, commitRows: 1,
} as HistoryOptions);

const rows = (n: number, from: number): HistoryRow[] =>
  Array.from({ length: n }, (_, i) => ['', Date.now() / 1000 + i / 1e6, `sensor:stress/s${(from + i) % 13}`, 1, `${from + i}`]);

async function histories(id: number): Promise<void> {
  const file = path.join(root, `h${id}`, 'h.db');
  for (let cycle = 0; Date.now() < end; cycle++) {
    const h = new History(options(file), quiet);
    if (cycle % 5 === 4) {
      // stopped while its thread still loads sql.js and opens the file
      void h.start().catch(() => undefined);
      await h.stop();
      counts.stoppedOpening++;
      continue;
    }
    await h.start();
    const writes: Promise<void>[] = [];
    for (let b = 0; b < 20; b++) writes.push(h.write(rows(50, b * 50)));
    await Promise.all(writes);
    counts.rows += 1000;
    await Promise.all([h.query({ space: '', limit: 100 }), h.resample('', 'sensor:stress/s1', 0, Date.now() / 1000, 60), h.flush()]);
    counts.queries += 2;
    await h.stop();
    counts.cycles++;
  }
}

/** Threads started and ended back to back, several at once: starts overlap other threads' ends. */
async function churn(id: number): Promise<void> {
  const file = path.join(root, `churn${id}`, 'h.db');
  while (Date.now() < end) {
    const h = new History(options(file), quiet);
    await h.write(rows(10, 0));
    await h.stop();
    counts.churned++;
  }
}

async function failingOpens(): Promise<void> {
  const blocker = path.join(root, 'not-a-folder');
  fs.writeFileSync(blocker, 'x');
  const h = new History(options(path.join(blocker, 'h.db')), quiet);
  while (Date.now() < end) {
    await h.write(rows(1, 0)).then(() => { throw new Error('a history under a file opened'); }, () => { counts.failedOpens++; });
    await new Promise((r) => setTimeout(r, 5)); // as the notifier host retries: not in a tight loop
  }
  await h.stop().catch(() => undefined); // what is measured here is whether the process survives
}

async function journal(): Promise<void> {
  const dir = path.join(root, 'items');
  fs.mkdirSync(dir);
  const j = new Journal(path.join(dir, 'items.json'));
  let held = 0;
  j.open(held);
  while (Date.now() < end) {
    for (let i = 0; i < 200; i++) await j.appendAsync({ [`sensor:x/${i}`]: { status: 1, value: String(i) } });
    counts.journalRecords += 200;
    const upTo = j.rotate();
    let n = 0;
    for (const _ of j.replay(held, () => { throw new Error('a torn record in a journal nobody cut'); })) n++;
    if (n !== 200) throw new Error(`the journal replayed ${n} of 200 records`);
    counts.journalReplays++;
    j.drop(upTo);
    held = upTo;
  }
  j.close(true);
}

const BURN = 'const { parentPort } = require("node:worker_threads"); let stop = false; parentPort.on("message", () => { stop = true; });'
  + ' (function spin() { const t = Date.now(); while (Date.now() - t < 50) Math.sqrt(Math.random()); if (!stop) setImmediate(spin); else parentPort.close(); })();';

(async () => {
  const burners = Array.from({ length: BURNERS }, () => new Worker(BURN, { eval: true }));
  const began = Date.now();
  try {
    await Promise.all([
      ...Array.from({ length: HISTORIES }, (_, i) => histories(i)),
      ...Array.from({ length: CHURNS }, (_, i) => churn(i)),
      failingOpens(), failingOpens(), journal(),
    ]);
  } finally {
    for (const b of burners) b.postMessage('stop');
    fs.rmSync(root, { recursive: true, force: true });
  }
  process.stdout.write(`node ${process.version}: ${((Date.now() - began) / 1000).toFixed(0)} s, ${JSON.stringify(counts)}\n`);
})().catch((err) => {
  process.stderr.write(`stress failed: ${(err as Error).stack}\n`);
  process.exit(1);
});
