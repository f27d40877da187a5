import fs from 'node:fs';
import test from 'ava';
import { Keys, makeDir, spawnController } from '../helpers/controller';
import { Receiver } from '../helpers/receiver';
import { controllerLog, notifierFiles, stats } from '../helpers/notifiers';
import { DeliveryDefaults } from '../../plugins/notifiers/host/defaults';
import { BATCH_SHARE } from '../../plugins/notifiers/host/delivery';

/*
 * The figure: with a web hook that is down, a notifier queue must
 * not keep every event it is handed. 1,500 updates of 400 KB (600 MB of
 * values) to a controller in its own process, whose RSS is read from /proc
 * while they run. Without the byte bound the queue keeps them all (RSS +600
 * MB and more); with it, queue_max_bytes (32 MiB) wait plus the batch in
 * hand (a sixteenth of that).
 */

const UPDATES = Number(process.env.QUEUE_MEMORY_UPDATES ?? 1500);
const VALUE = 400_000;
const LIMIT_MB = 350;
const MiB = 1024 * 1024;

/** A figure of /proc/<pid>/status in bytes (VmRSS now, VmHWM the peak so far). */
function procStatus(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(m[1]) * 1024;
}

/** The value of a sample of GET /metrics whose labels include `labels`. */
function metric(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue;
    return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

test(`${UPDATES} updates of 400 KB with a dead web hook stay within +${LIMIT_MB} MB RSS; the drops show in get_notifier and /metrics`, async (t) => {
  t.timeout(600_000);
  const dead = await Receiver.start(t);
  const uri = dead.uri;
  await dead.close(); // a port nobody listens on: every send is refused at once, then retried
  const dir = makeDir(t, {
    // the values are not what is measured here: the items file is written once, at stop
    ini: { server: { db_update: 'manual' } },
    files: notifierFiles({ hook: { type: 'json', uri, skip_test: true, timeout: 5, durable: false, events: [{ subject: 'state', types: ['#'], groups: ['#'] }] } }),
  });
  const c = await spawnController(t, dir);
  const pid = c.proc.pid!;
  const k = Keys.master;
  await c.client.ok('create', { k, i: 'sensor:big/s' });
  const body = (i: number) => JSON.stringify({ jsonrpc: '2.0', method: 'update', params: { k, i: 'sensor:big/s', v: String(i).padEnd(VALUE, 'x') }, id: i });
  const update = async (i: number) => {
    const r = await fetch(`${c.url}/jrpc`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: body(i) });
    const a = (await r.json()) as { result?: unknown; error?: { message: string } };
    if (a.error) throw new Error(`update ${i}: ${a.error.message}`);
  };
  // warm-up: the HTTP server, the parser and the notifier have handled large bodies once
  for (let i = 0; i < 20; i++) await update(-1 - i);
  const before = procStatus(pid, 'VmRSS');
  let peak = before;
  const sampler = setInterval(() => { try { peak = Math.max(peak, procStatus(pid, 'VmRSS')); } catch { /* exited */ } }, 100);
  let next = 0;
  const worker = async () => { while (next < UPDATES) await update(next++); };
  const started = Date.now();
  try {
    await Promise.all([worker(), worker(), worker(), worker()]);
  } finally {
    clearInterval(sampler);
  }
  const seconds = (Date.now() - started) / 1000;
  peak = Math.max(peak, procStatus(pid, 'VmRSS'), procStatus(pid, 'VmHWM'));
  const after = procStatus(pid, 'VmRSS');
  const s = await stats(c.client, k, 'hook');
  const metrics = await (await fetch(`${c.url}/metrics`, { headers: { 'X-Auth-Key': k } })).text();
  t.log(`${UPDATES} updates of ${VALUE} characters in ${seconds.toFixed(1)} s; RSS before ${(before / MiB).toFixed(0)} MiB, `
    + `peak ${(peak / MiB).toFixed(0)} MiB (+${((peak - before) / MiB).toFixed(0)}), after ${(after / MiB).toFixed(0)} MiB; `
    + `queued ${s.queued} (${(s.queued_bytes / MiB).toFixed(1)} MiB), dropped ${s.dropped}, failed ${s.failed}`);
  t.true(peak - before < LIMIT_MB * 1e6, `RSS grew by ${((peak - before) / 1e6).toFixed(0)} MB`);
  // what waits is within the bound, plus the batch in hand
  const bound = DeliveryDefaults.queue_max_bytes;
  t.true(s.queued_bytes <= bound + bound / BATCH_SHARE, `${s.queued_bytes} bytes queued`);
  t.true(s.dropped >= UPDATES + 20 - s.queued - 200, `dropped ${s.dropped}, queued ${s.queued}`);
  const dropped = metric(metrics, 'eva_notifier_dropped_total', { notifier: 'hook' });
  t.true(dropped !== undefined && dropped >= s.dropped, `/metrics: ${dropped}`);
  t.not(metric(metrics, 'eva_notifier_queued_bytes', { notifier: 'hook' }), undefined);
  t.true(controllerLog(dir).includes(`notifier hook: queue full (10000 events or ${bound} bytes), dropping the oldest events`));
});
