import 'reflect-metadata';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { makeDir, spawnController, Keys } from '../helpers/controller';
import { startBroker, Subscriber } from '../helpers/broker';
import { table, fmt, benchUpdatePlugin } from './lib';

/**
 * An hour-long outage compressed in time, not in volume: a web hook receiver
 * and an MQTT broker away while 360 000 state events (an hour at 100 a
 * second) are made, then back; every one must arrive.
 *
 *   npm run bench -- outage     (or node dist/test/bench/outage.js; OUTAGE_EVENTS=n for another count)
 *
 * A controller in its own process with two durable notifiers, their bounds
 * raised to hold the whole outage (queue_size 400 000, queue_max_bytes
 * 512 MiB; overflow refuse, the durable default, so an event past them
 * would be refused and counted, never dropped):
 *
 *   hook  json web hook, its receiver answering 503 during the outage
 *         (retries for ever, retry_max_delay 2 s so the recovery starts soon)
 *   m1    mqtt, QoS 1, state_topics json (one message per event), the
 *         broker (aedes, in this process) stopped during the outage
 *
 * The events are made by `bench_update` (items.update, 1 000 per call),
 * values 1..N. Then the receiver answers 200 and the broker listens again.
 * Figures: time to accept every event (on disk in both outboxes), journal
 * bytes on disk and written per event, fsyncs, time to drain each, events
 * lost (N minus the distinct values received) and received twice, the
 * controller's peak resident memory (VmHWM) and at the end.
 */
const N = Number(process.env.OUTAGE_EVENTS ?? 360_000);
const k = Keys.master;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mib = (n: number) => `${fmt(n / 1024 / 1024, 1)} MiB`;
const owner = { fns: [] as (() => unknown)[], teardown(fn: () => unknown) { this.fns.push(fn); } };

function status(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

/** Bytes of one notifier's journal segments. */
function journalBytes(dir: string, id: string): number {
  const box = path.join(dir, 'runtime', 'outbox');
  let n = 0;
  for (const f of fs.existsSync(box) ? fs.readdirSync(box) : []) {
    if (!f.startsWith(`${id}.journal.`)) continue;
    try { n += fs.statSync(path.join(box, f)).size; } catch { /* gone meanwhile */ }
  }
  return n;
}

async function main(): Promise<void> {
  // the web hook receiver: 503 while away, then every value it is given
  let away = true;
  const hookValues = new Set<string>();
  let hookEvents = 0;
  const rcv = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (away) { res.statusCode = 503; res.end('away'); return; }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { data?: { value: string }[] };
      for (const e of body.data ?? []) { hookValues.add(e.value); hookEvents++; }
      res.setHeader('Content-Type', 'application/json');
      res.end('{"result":"OK"}');
    });
  });
  await new Promise<void>((r) => rcv.listen(0, '127.0.0.1', r));
  const uri = `http://127.0.0.1:${(rcv.address() as AddressInfo).port}/hook`;

  const broker = await startBroker(owner, { kind: 'aedes' });
  // its session outlives the outage: what is published once the broker is back reaches it
  const sub = await Subscriber.connect(owner, broker, { clientId: `w-${crypto.randomBytes(4).toString('hex')}`, clean: false });
  await sub.subscribe('sp/sensor/bench/s', 1);

  const bounds = { queue_size: 400_000, queue_max_bytes: 512 * 1024 * 1024 };
  const events = [{ subject: 'state', types: ['#'], groups: ['#'] }];
  const dir = makeDir(undefined, {
    files: {
      'plugins/bench-update.js': benchUpdatePlugin('sensor:bench/s'),
      'runtime/uc_notify.d/hook.json': JSON.stringify({
        id: 'hook', type: 'json', uri, enabled: true, skip_test: true, events, retries: 1_000_000, retry_delay: 0.5, retry_max_delay: 2, ...bounds,
      }),
      'runtime/uc_notify.d/m1.json': JSON.stringify({
        id: 'm1', type: 'mqtt', host: broker.host, port: broker.port, space: 'sp', enabled: true, skip_test: true, events,
        qos: 1, state_topics: 'json', durable: true, timeout: 30, ...bounds,
      }),
    },
  });
  const c = await spawnController(undefined, dir);
  const pid = c.proc.pid!;
  const stats = async (id: string) => (await c.client.ok('get_notifier', { k, i: id })).stats as Record<string, any>;
  await c.client.ok('create', { k, i: 'sensor:bench/s' });
  for (let i = 0; !(await stats('m1')).connected; i++) {
    if (i > 600) throw new Error('m1 never connected');
    await sleep(100);
  }
  await sleep(1000); // the creation's event delivered
  await broker.stop();

  const fed = Date.now();
  for (let from = 1; from <= N; from += 1000) await c.client.ok('bench_update', { k, n: Math.min(1000, N - from + 1), from });
  const made = Date.now() - fed;
  // every event on disk in both outboxes
  for (;;) {
    const [h, m] = [await stats('hook'), await stats('m1')];
    if (h.outbox.held >= N && m.outbox.held >= N) break;
    if (h.refused || m.refused || h.dropped || m.dropped) throw new Error(`refused or dropped: ${JSON.stringify({ hook: h, m1: m })}`);
    await sleep(200);
  }
  const accepted = Date.now() - fed;
  const atPeak = { hook: await stats('hook'), m1: await stats('m1') };
  const disk = { hook: journalBytes(dir, 'hook'), m1: journalBytes(dir, 'm1') };
  const rssHeld = status(pid, 'VmRSS');

  // back: the receiver answers, the broker listens
  const back = Date.now();
  away = false;
  await broker.start();
  const drained: Record<string, number> = {};
  for (;;) {
    for (const id of ['hook', 'm1']) if (drained[id] === undefined && (await stats(id)).outbox.held === 0) drained[id] = Date.now() - back;
    if (drained.hook !== undefined && drained.m1 !== undefined) break;
    if (Date.now() - back > 30 * 60_000) throw new Error('not drained in 30 minutes');
    await sleep(500);
  }
  // the last messages on their way to the subscriber
  const mqttValues = () => new Set(sub.messages.filter((m) => m.topic === 'sp/sensor/bench/s').map((m) => (JSON.parse(m.payload) as { value: string }).value));
  for (let i = 0; i < 100 && mqttValues().size < N + 1; i++) await sleep(200);
  const want = (got: Set<string>) => { let lost = 0; for (let i = 1; i <= N; i++) if (!got.has(String(i))) lost++; return lost; };
  const mqttMessages = sub.messages.filter((m) => m.topic === 'sp/sensor/bench/s').length;
  const end = { hook: await stats('hook'), m1: await stats('m1') };
  const rows = (['hook', 'm1'] as const).map((id) => {
    const got = id === 'hook' ? hookValues : mqttValues();
    const total = id === 'hook' ? hookEvents : mqttMessages;
    return [id, N, fmt(accepted / 1000, 1), mib(disk[id]), fmt(disk[id] / N, 0), fmt(atPeak[id].outbox.written / N, 0), atPeak[id].outbox.fsyncs,
      fmt(drained[id] / 1000, 1), want(got), total - got.size, end[id].refused ?? 0, end[id].dropped];
  });
  console.log(`${N} events made in ${fmt(made / 1000, 1)} s; accepted (on disk in both outboxes) after ${fmt(accepted / 1000, 1)} s`);
  console.log(table(['notifier', 'events', 'on disk after (s)', 'journal at the peak', 'journal bytes/event', 'written bytes/event', 'fsyncs', 'drain (s)', 'lost', 'twice', 'refused', 'dropped'], rows));
  console.log(`controller RSS: ${mib(rssHeld)} holding both outboxes, peak (VmHWM) ${mib(status(pid, 'VmHWM'))}, ${mib(status(pid, 'VmRSS'))} at the end`);
  c.proc.kill('SIGTERM');
  await c.exited;
  for (const fn of owner.fns.reverse()) await fn();
  rcv.close();
  fs.rmSync(dir, { recursive: true, force: true });
}

main().then(() => process.exit(0), (err) => { console.error(err); process.exit(1); });
