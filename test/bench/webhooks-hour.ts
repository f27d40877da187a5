import 'reflect-metadata';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { makeDir, spawnController, Keys } from '../helpers/controller';
import { table, fmt, benchUpdatePlugin } from './lib';

/**
 * A receiver that is down for a real hour: wall-clock time, not a burst.
 *
 *   npm run bench -- webhooks-hour     (or node dist/test/bench/webhooks-hour.js)
 *
 * A controller (its own process, so its memory is its own) with three
 * durable json notifiers whose receivers never take anything:
 *
 *   refused   connection refused, retrying for ever (retries 1 000 000)
 *   busy      a receiver answering 503, retrying for ever
 *   defaults  connection refused, the default retries (5): an outage is
 *             waited for whatever the retries (until outbox_max_age), so
 *             it reads as refused does (before: frames went to the dead
 *             letters after their 5 retries)
 *
 * Events are fed at HOUR_RATE per second (default 100: `bench_update` every
 * 100 ms, caught up to the clock) for HOUR_SECONDS (default 3 600). Every
 * HOUR_SAMPLE seconds (default 60) a row per notifier: the outbox's journal
 * on disk, what it holds, dropped at the bound, expired, dead letters and
 * their file, fsyncs and bytes written, and the controller's resident memory.
 * Rows print as they come (a log to follow); the tables at the end.
 */
const SECONDS = Number(process.env.HOUR_SECONDS ?? 3600);
const RATE = Number(process.env.HOUR_RATE ?? 100);
const SAMPLE = Number(process.env.HOUR_SAMPLE ?? 60);
const k = Keys.master;
const IDS = ['refused', 'busy', 'defaults'] as const;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mib = (n: number) => `${fmt(n / 1024 / 1024, 2)} MiB`;

/** Bytes of the files of one notifier's outbox folder whose names start with `prefix`. */
function bytesOf(dir: string, prefix: string): number {
  const box = path.join(dir, 'runtime', 'outbox');
  if (!fs.existsSync(box)) return 0;
  let n = 0;
  for (const f of fs.readdirSync(box)) {
    if (!f.startsWith(prefix)) continue;
    try { n += fs.statSync(path.join(box, f)).size; } catch { /* gone meanwhile (compaction) */ }
  }
  return n;
}

/** Resident memory of a process (bytes), from /proc. */
function rss(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

async function main(): Promise<void> {
  const busy = http.createServer((req, res) => { req.resume(); req.on('end', () => { res.statusCode = 503; res.end('down'); }); });
  await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
  const busyUrl = `http://127.0.0.1:${(busy.address() as AddressInfo).port}/hook`;
  const hook = (id: string, uri: string, extra: Record<string, unknown>) => JSON.stringify({
    id, type: 'json', uri, enabled: true, skip_test: true, events: [{ subject: 'state', types: ['#'], groups: ['#'] }], ...extra,
  });
  const forever = { retries: 1_000_000, retry_delay: 1, retry_max_delay: 30 };
  const dir = makeDir(undefined, {
    files: {
      'plugins/bench-update.js': benchUpdatePlugin('sensor:bench/s'),
      'runtime/uc_notify.d/refused.json': hook('refused', 'http://127.0.0.1:9/never', forever),
      'runtime/uc_notify.d/busy.json': hook('busy', busyUrl, forever),
      'runtime/uc_notify.d/defaults.json': hook('defaults', 'http://127.0.0.1:9/never', {}),
    },
  });
  const c = await spawnController(undefined, dir);
  const head = ['minute', 'notifier', 'journal on disk', 'held', 'dropped', 'expired', 'dead letters', 'dead file', 'fsyncs', 'written', 'controller RSS'];
  const rows: Record<string, (string | number)[][]> = { refused: [], busy: [], defaults: [] };
  let peak = 0;
  const peaks: Record<string, number> = { refused: 0, busy: 0, defaults: 0 };
  const sample = async (minute: string) => {
    const mem = rss(c.proc.pid!);
    peak = Math.max(peak, mem);
    for (const id of IDS) {
      const s = (await c.client.ok('get_notifier', { k, i: id })).stats;
      const journal = bytesOf(dir, `${id}.journal.`);
      peaks[id] = Math.max(peaks[id], journal);
      const o = s.outbox;
      const row = [minute, id, mib(journal), o.held, s.dropped, o.expired, `${o.dead_letters} (${o.dead} events, ${o.dead_dropped} dropped)`, mib(bytesOf(dir, `${id}.dead.`)), o.fsyncs, mib(o.written), mib(mem)];
      rows[id].push(row);
      console.log(`| ${row.join(' | ')} |`);
    }
  };
  try {
    await c.client.ok('create', { k, i: 'sensor:bench/s' });
    console.log(`### ${SECONDS} s at ${RATE} events/s into three durable json notifiers whose receivers take nothing\n`);
    console.log(`| ${head.join(' | ')} |\n| ${head.map(() => '---').join(' | ')} |`);
    const start = Date.now();
    let fed = 0;
    let next = SAMPLE;
    await sample('0');
    while (Date.now() - start < SECONDS * 1000) {
      const want = Math.min(SECONDS * RATE, Math.floor((Date.now() - start) / 1000 * RATE));
      if (want > fed) {
        await c.client.ok('bench_update', { k, n: want - fed });
        fed = want;
      }
      if ((Date.now() - start) / 1000 >= next) {
        await sample(String(Number((next / 60).toFixed(2))));
        next += SAMPLE;
      }
      await sleep(100);
    }
    await sample(`${fmt((Date.now() - start) / 60000, 1)} (end, ${fed} events fed)`);
    console.log('');
    for (const id of IDS) {
      console.log(`\n#### ${id}: journal peak ${mib(peaks[id])}, controller RSS peak ${mib(peak)}\n`);
      console.log(table(head, rows[id]));
    }
  } finally {
    c.proc.kill('SIGTERM');
    await Promise.race([c.exited, sleep(10_000)]);
    busy.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().then(() => process.exit(0), (err) => { console.error(err); process.exit(1); });
