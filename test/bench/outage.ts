import 'reflect-metadata';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import WebSocket from 'ws';
import { makeDir, spawnController, Keys, type Child } from '../helpers/controller';
import { startBroker, Subscriber } from '../helpers/broker';
import { SparkplugHost } from '../helpers/sparkplug-host';
import { NODE } from '../helpers/sparkplug-node';
import { STATS_PLUGIN } from '../helpers/stream-client';
import { table, fmt, benchUpdatePlugin } from './lib';

/**
 * An hour-long outage compressed in time, not in volume: every way out of
 * the controller away while 360 000 state events (an hour at 100 a second)
 * are made, then back; every one must arrive.
 *
 *   npm run bench -- outage     (or node dist/test/bench/outage.js; OUTAGE_EVENTS=n for another count)
 *
 * A controller in its own process with three durable notifiers, their
 * bounds raised to hold the whole outage (queue_size 400 000,
 * queue_max_bytes 512 MiB; overflow refuse, the durable default, so an
 * event past them would be refused and counted, never dropped), and a
 * stream client:
 *
 *   hook    json web hook, its receiver answering 503 during the outage
 *           (retries for ever, retry_max_delay 2 s so the recovery starts soon)
 *   m1      mqtt, QoS 1, state_topics json (one message per event)
 *   sp      Sparkplug edge node, devices = node, primary host `scada`; once
 *           the broker and the host are back: NBIRTH (the newest state),
 *           then the outage as historical NDATA
 *   stream  a /ws client that leaves before the outage and subscribes
 *           again with `since` after it; the ring raised to hold it
 *           (ws_replay_events 400 000, ws_replay_bytes 256 MiB): at the
 *           defaults (100 000 events, 32 MiB) it gets a `gap` and the
 *           current state instead
 *
 * m1 and sp share one broker (aedes, in this process), stopped during the
 * outage. The events are made by `bench_update` (items.update, 1 000 per
 * call), values 1..N. Then the receiver answers 200, the broker listens
 * again, the host says it is online, the client resumes.
 *
 * Two rounds, each with a fresh controller directory:
 *   1. the drain runs to its end;
 *   2. the controller is SIGKILLed in the middle of the drain (once one
 *      notifier has delivered a quarter of the values and each of the
 *      others at least 1 000) and started again: what it
 *      accepted must still arrive (at least once: what was sent and not yet
 *      marked done comes again). The stream is not in it: its ring is memory.
 * Figures per path: time to accept every event (on disk in the outbox),
 * journal bytes on disk and written per event, fsyncs, drain time, events
 * lost (N minus the distinct values received), received twice, the
 * controller's peak resident memory (VmHWM).
 */
const N = Number(process.env.OUTAGE_EVENTS ?? 360_000);
const KILL_AT = Math.floor(N / 4);
const k = Keys.master;
const NOTIFIERS = ['hook', 'm1', 'sp'] as const;
type Id = typeof NOTIFIERS[number];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mib = (n: number) => `${fmt(n / 1024 / 1024, 1)} MiB`;

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

/** Arrivals of the values 1..N: distinct and in all. */
class Tally {
  readonly seen = new Set<string>();
  total = 0;
  add(v: unknown): void {
    const s = String(v);
    const i = Number(s);
    if (!(i >= 1 && i <= N)) return;
    this.seen.add(s);
    this.total++;
  }
  get lost(): number { return N - this.seen.size; }
  get twice(): number { return this.total - this.seen.size; }
}

/** The web hook receiver: 503 while away, then every value it is given. */
async function receiver() {
  const r = { away: true, tally: new Tally(), uri: '', close: () => {} };
  const srv = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (r.away) { res.statusCode = 503; res.end('away'); return; }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { data?: { value: string }[] };
      for (const e of body.data ?? []) r.tally.add(e.value);
      res.setHeader('Content-Type', 'application/json');
      res.end('{"result":"OK"}');
    });
  });
  await new Promise<void>((ok) => srv.listen(0, '127.0.0.1', ok));
  r.uri = `http://127.0.0.1:${(srv.address() as AddressInfo).port}/hook`;
  r.close = () => { srv.closeAllConnections(); srv.close(); };
  return r;
}

/** The value metric of sensor:bench/s at a Sparkplug host, counted across births (every NBIRTH and NDATA, in order). */
function sparkplugTally(host: () => SparkplugHost | undefined) {
  const tally = new Tally();
  let seenOf: SparkplugHost | undefined;
  let at = 0;
  let alias: number | undefined;
  let births = 0;
  let historical = 0;
  return {
    tally,
    get births() { return births; },
    get historical() { return historical; },
    update(): void {
      const h = host();
      if (!h) return;
      if (h !== seenOf) { seenOf = h; at = 0; }
      for (; at < h.messages.length; at++) {
        const m = h.messages[at];
        if (m.kind === 'NBIRTH') {
          births++;
          const v = m.metrics.find((x) => x.name === 'sensor/bench/s/value');
          alias = v?.alias;
          if (v) tally.add(v.value);
        } else if (m.kind === 'NDATA') {
          for (const x of m.metrics) {
            if (x.alias !== alias) continue;
            tally.add(x.value);
            if (x.is_historical) historical++;
          }
        }
      }
    },
  };
}

/** A /ws client: subscribes to state events, `since` when given; every frame kept for the tally. */
async function streamClient(url: string, since?: number) {
  const ws = new WebSocket(url.replace(/^http/, 'ws') + '/ws');
  const r = { ws, tally: new Tally(), last: 0, gaps: 0, frames: 0, first: undefined as any };
  ws.on('message', (data) => {
    const m = JSON.parse(data.toString()) as { s?: string; seq?: number; d?: { oid: string; value: string }[] };
    r.frames++;
    if (m.s === 'subscribed' || m.s === 'gap') r.first ??= m;
    if (m.seq !== undefined) r.last = m.seq;
    if (m.s === 'gap') r.gaps++;
    for (const e of (m.s === 'state' ? m.d : undefined) ?? []) if (e.oid === 'sensor:bench/s') r.tally.add(e.value);
  });
  await new Promise((ok, fail) => { ws.once('open', ok); ws.once('error', fail); });
  ws.send(JSON.stringify({ m: 'auth', k }));
  ws.send(JSON.stringify({ m: 'subscribe', events: [{ subject: 'state', types: ['#'], groups: ['#'] }], ...(since === undefined ? {} : { since }) }));
  return r;
}

interface Result {
  rows: (string | number)[][];
  lines: string[];
}

async function round(kill: boolean): Promise<Result> {
  const owner = { fns: [] as (() => unknown)[], teardown(fn: () => unknown) { this.fns.push(fn); } };
  const rcv = await receiver();
  const broker = await startBroker(owner, { kind: 'aedes' });
  // its session outlives the outage: what is published once the broker is back reaches it
  const sub = await Subscriber.connect(owner, broker, { clientId: `w-${crypto.randomBytes(4).toString('hex')}`, clean: false });
  await sub.subscribe('sp/sensor/bench/s', 1);
  const mqtt = new Tally();
  let subAt = 0;
  const mqttUpdate = () => {
    for (; subAt < sub.messages.length; subAt++) {
      const m = sub.messages[subAt];
      if (m.topic === 'sp/sensor/bench/s') mqtt.add((JSON.parse(m.payload) as { value: string }).value);
    }
  };
  let host: SparkplugHost | undefined = await SparkplugHost.connect(owner, broker, 'plant', 'scada');
  await host.state('scada', true);
  const sp = sparkplugTally(() => host);

  const bounds = { queue_size: 400_000, queue_max_bytes: 512 * 1024 * 1024 };
  const events = [{ subject: 'state', types: ['#'], groups: ['#'] }];
  const dir = makeDir(undefined, {
    ini: kill ? {} : { webapi: { ws_replay_events: 400_000, ws_replay_bytes: 256 * 1024 * 1024 } },
    files: {
      'plugins/bench-update.js': benchUpdatePlugin('sensor:bench/s'),
      'plugins/streamprobe.js': STATS_PLUGIN,
      'runtime/uc_notify.d/hook.json': JSON.stringify({
        id: 'hook', type: 'json', uri: rcv.uri, enabled: true, skip_test: true, events, retries: 1_000_000, retry_delay: 0.5, retry_max_delay: 2, ...bounds,
      }),
      'runtime/uc_notify.d/m1.json': JSON.stringify({
        id: 'm1', type: 'mqtt', host: broker.host, port: broker.port, space: 'sp', enabled: true, skip_test: true, events,
        qos: 1, state_topics: 'json', durable: true, timeout: 30, ...bounds,
      }),
      'runtime/uc_notify.d/sp.json': JSON.stringify({
        id: 'sp', type: 'sparkplug', host: broker.host, port: broker.port, group_id: 'plant', edge_node_id: NODE, primary_host_id: 'scada',
        devices: 'node', enabled: true, skip_test: true, events, durable: true, timeout: 30, ...bounds,
      }),
    },
  });
  let c: Child = await spawnController(undefined, dir);
  const stats = async (id: string) => (await c.client.ok('get_notifier', { k, i: id })).stats as Record<string, any>;
  await c.client.ok('create', { k, i: 'sensor:bench/s' });
  for (let i = 0; !(await stats('m1')).connected || sp.births === 0; i++) {
    if (i > 600) throw new Error('m1 or sp never connected');
    await sleep(100);
    sp.update();
  }
  // the stream client, there for the creation, then away
  const before = kill ? undefined : await streamClient(c.url);
  for (let i = 0; before && before.last === 0; i++) {
    if (i > 600) throw new Error('no stream state');
    await sleep(100);
  }
  before?.ws.close();
  await sleep(1000); // the creation's event delivered
  await broker.stop();
  host = undefined;

  const fed = Date.now();
  for (let from = 1; from <= N; from += 1000) await c.client.ok('bench_update', { k, n: Math.min(1000, N - from + 1), from });
  const made = Date.now() - fed;
  // every event on disk in every outbox
  for (;;) {
    const s = await Promise.all(NOTIFIERS.map((id) => stats(id)));
    if (s.every((x) => x.outbox.held >= N)) break;
    if (s.some((x) => x.refused || x.dropped)) throw new Error(`refused or dropped: ${JSON.stringify(s)}`);
    await sleep(200);
  }
  const accepted = Date.now() - fed;
  const atPeak = Object.fromEntries(await Promise.all(NOTIFIERS.map(async (id) => [id, await stats(id)]))) as Record<Id, Record<string, any>>;
  const disk = Object.fromEntries(NOTIFIERS.map((id) => [id, journalBytes(dir, id)])) as Record<Id, number>;
  const rssHeld = status(c.proc.pid!, 'VmRSS');
  const ring = kill ? undefined : await c.client.ok('stream_stats', { k }) as Record<string, number>;

  // back: the receiver answers, the broker listens, the host is online, the stream client resumes
  const back = Date.now();
  rcv.away = false;
  await broker.start();
  host = await SparkplugHost.connect(owner, broker, 'plant', 'scada');
  await host.state('scada', true);
  const resumed = before ? await streamClient(c.url, before.last) : undefined;
  const received = { hook: rcv.tally, m1: mqtt, sp: sp.tally } as Record<Id, Tally>;
  const drained: Record<string, number> = {};
  const heldAtKill: Record<string, number> = {};
  const lines: string[] = [];
  let killedAt: number | undefined;
  let hwmKilled = 0;
  for (;;) {
    mqttUpdate();
    sp.update();
    // the fastest a quarter through, every other under way: all three in their drain
    if (kill && killedAt === undefined && NOTIFIERS.some((id) => received[id].seen.size >= KILL_AT) && NOTIFIERS.every((id) => received[id].seen.size >= 1000)) {
      for (const id of NOTIFIERS) heldAtKill[id] = (await stats(id)).outbox.held;
      hwmKilled = status(c.proc.pid!, 'VmHWM');
      c.proc.kill('SIGKILL');
      await c.exited;
      killedAt = Date.now() - back;
      lines.push(`SIGKILL after ${fmt(killedAt / 1000, 1)} s of drain; held then: ${NOTIFIERS.map((id) => `${id} ${heldAtKill[id]}`).join(', ')}; ` +
        `delivered (distinct) then: ${NOTIFIERS.map((id) => `${id} ${received[id].seen.size}`).join(', ')}`);
      const t0 = Date.now();
      c = await spawnController(undefined, dir);
      lines.push(`started again in ${fmt((Date.now() - t0) / 1000, 1)} s; held after the restart: ${(await Promise.all(NOTIFIERS.map(async (id) => `${id} ${(await stats(id)).outbox.held}`))).join(', ')}`);
    }
    if (!kill || killedAt !== undefined) {
      for (const id of NOTIFIERS) if (drained[id] === undefined && (await stats(id)).outbox.held === 0) drained[id] = Date.now() - back;
    }
    if (resumed && drained.stream === undefined && resumed.tally.seen.size >= N) drained.stream = Date.now() - back;
    if (NOTIFIERS.every((id) => drained[id] !== undefined) && (!resumed || drained.stream !== undefined)) break;
    if (Date.now() - back > 30 * 60_000) throw new Error(`not drained in 30 minutes: ${JSON.stringify(drained)}`);
    await sleep(500);
  }
  // the last messages on their way to the subscriber and the host
  for (let i = 0; i < 100 && (mqtt.seen.size < N || sp.tally.seen.size < N); i++) { await sleep(200); mqttUpdate(); sp.update(); }
  const end = Object.fromEntries(await Promise.all(NOTIFIERS.map(async (id) => [id, await stats(id)]))) as Record<Id, Record<string, any>>;
  const hwm = Math.max(hwmKilled, status(c.proc.pid!, 'VmHWM'));
  const name = kill ? 'SIGKILL in the drain' : 'drain';
  const rows: (string | number)[][] = NOTIFIERS.map((id) => [name, id, N, fmt(accepted / 1000, 1), mib(disk[id]), fmt(disk[id] / N, 0), fmt(atPeak[id].outbox.written / N, 0),
    atPeak[id].outbox.fsyncs, fmt(drained[id] / 1000, 1), received[id].lost, received[id].twice, end[id].refused ?? 0, end[id].dropped, mib(hwm)]);
  if (resumed && ring) {
    rows.push([name, 'stream', N, '-', '-', '-', '-', '-', fmt(drained.stream / 1000, 1), resumed.tally.lost, resumed.tally.twice, '-', '-', mib(hwm)]);
    lines.push(`stream: resumed with since ${before!.last}; answered ${JSON.stringify(resumed.first)}; ${resumed.gaps} gaps; ring before the resume: ` +
      `${ring.ring_events} events, ${mib(ring.ring_bytes)} counted (bounds raised to 400 000 events, 256 MiB), ${ring.ring_dropped} dropped`);
    resumed.ws.close();
  }
  lines.push(`sp: ${sp.births} NBIRTHs seen, ${sp.historical} historical values`);
  lines.push(`made in ${fmt(made / 1000, 1)} s; accepted (on disk in every outbox) after ${fmt(accepted / 1000, 1)} s`);
  lines.push(`controller RSS: ${mib(rssHeld)} holding the outboxes${ring ? ' and the ring' : ''}, peak (VmHWM) ${mib(hwm)}, ${mib(status(c.proc.pid!, 'VmRSS'))} at the end`);
  c.proc.kill('SIGTERM');
  await c.exited;
  for (const fn of owner.fns.reverse()) await fn();
  rcv.close();
  fs.rmSync(dir, { recursive: true, force: true });
  return { rows, lines };
}

async function main(): Promise<void> {
  const results = [await round(false), await round(true)];
  console.log(table(['round', 'path', 'events', 'on disk after (s)', 'journal at the peak', 'journal bytes/event', 'written bytes/event', 'fsyncs', 'drain (s)', 'lost', 'twice', 'refused', 'dropped', 'peak RSS'],
    results.flatMap((r) => r.rows)));
  for (const [i, r] of results.entries()) for (const l of r.lines) console.log(`round ${i + 1}: ${l}`);
}

main().then(() => process.exit(0), (err) => { console.error(err); process.exit(1); });
