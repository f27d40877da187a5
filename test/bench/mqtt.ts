import 'reflect-metadata';
import fs from 'node:fs';
import os from 'node:os';
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import mqtt from 'mqtt';
import * as mqttPacket from 'mqtt-packet';
import { mqttProtocol, startBroker, type Broker } from '../helpers/broker';
import { startController, Keys } from '../helpers/controller';
import { table, fmt, benchUpdatePlugin, updateBatches, postBatches } from './lib';

/**
 * MQTT notifier throughput: state events per second from the items service's
 * `update` to an independent subscriber (a child process) through mosquitto,
 * at QoS 0 and 1, beside a raw batched loop publishing the same messages
 * (3.3's JSON state, status and value, retained, per event) to the same broker in the same run:
 * mqtt-packet frames written a batch of 1 000 events at a time over a plain socket.
 *
 *   node dist/test/bench/mqtt.js          (BENCH_MQTT_N events per run, default 20000)
 *   MQTT_PROTOCOL=5 node dist/test/bench/mqtt.js   (the notifier and the raw loop over MQTT 5:
 *                                          each message with the user properties the notifier adds)
 *
 * The raw loop and the notifier alternate over BENCH_ROUNDS rounds (default
 * 5) after a warm-up round; medians. Beside the rates, the CPU time of this
 * process per event delivered (the controller runs in it: update, routing
 * and publication; the raw loop: publication only): on two shared cores the
 * rate depends on the broker and the subscriber getting the other core, the
 * CPU per event on the publisher alone. Targets: QoS 0 ≥ 0.9, QoS 1 ≥ 0.8
 * of the raw loop.
 *
 * The updates come from a plugin calling the items service (nothing waits
 * for them), and from outside as well: JSON RPC batches of 1 000
 * `update` calls one after the other, on this controller at the defaults
 * (db_update instant: each batch answered once its changes are on disk)
 * and, at QoS 0, on a second one under db_update manual.
 */
const N = Number(process.env.BENCH_MQTT_N ?? 20_000);
const SUBSCRIBER_TIMEOUT_MS = 120_000;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const V5 = mqttProtocol() === '5';

/** The subscriber child: counts `n` value messages under `filter`, prints READY, then DONE <epoch ms of the last> <count>. */
async function subscriberMain(port: number, filter: string, n: number, qos: 0 | 1): Promise<void> {
  const client = mqtt.connect({ host: '127.0.0.1', port, protocolVersion: 4, clean: true });
  await new Promise<void>((r) => client.once('connect', () => r()));
  const seen = new Set<string>();
  let last = 0;
  const finish = () => {
    process.stdout.write(`DONE ${last} ${seen.size}\n`);
    client.end(true, {}, () => process.exit(0));
  };
  client.on('message', (_topic, payload, packet) => {
    if (packet.retain) return; // a retained message of an earlier run
    seen.add(payload.toString());
    last = performance.timeOrigin + performance.now();
    if (seen.size >= n) finish();
  });
  await client.subscribeAsync(filter, { qos });
  setTimeout(finish, SUBSCRIBER_TIMEOUT_MS).unref();
  process.stdout.write('READY\n');
}

interface Child { proc: ChildProcess; done: Promise<{ last: number; count: number }> }

function startSubscriber(port: number, filter: string, n: number, qos: 0 | 1): Promise<Child> {
  const proc = spawn(process.execPath, [__filename, '--subscriber', String(port), filter, String(n), String(qos)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  let ready: () => void;
  const isReady = new Promise<void>((r) => { ready = r; });
  const done = new Promise<{ last: number; count: number }>((resolve, reject) => {
    proc.stdout.on('data', (d) => {
      out += d;
      if (out.includes('READY')) ready();
      const m = /DONE (\S+) (\d+)/.exec(out);
      if (m) resolve({ last: Number(m[1]), count: Number(m[2]) });
    });
    proc.once('exit', (code) => { if (!/DONE/.test(out)) reject(new Error(`subscriber exited ${code}: ${out}`)); });
  });
  return isReady.then(() => ({ proc, done }));
}

const now = () => performance.timeOrigin + performance.now();

/** Events/s of a run: from `start` to the subscriber's last message; count says whether all arrived. */
async function measure(port: number, filter: string, qos: 0 | 1, run: () => Promise<void>) {
  const sub = await startSubscriber(port, filter, N, qos);
  const start = now();
  const cpu0 = process.cpuUsage();
  await run();
  const { last, count } = await sub.done;
  const cpu = process.cpuUsage(cpu0);
  return { rate: (count / (last - start)) * 1000, count, us: (cpu.user + cpu.system) / count };
}

/**
 * The raw loop: the messages the notifier sends for N state events, framed
 * with mqtt-packet (the client library's encoder) and written over a plain
 * socket a batch of 1 000 events (3 000 messages) at a time, as the
 * notifier's batches, pausing while the socket is full; QoS 1 with the
 * notifier's window of two batches (a batch is written once the one before
 * the last is acknowledged), then every acknowledgement awaited.
 */
async function rawLoop(broker: Broker, space: string, qos: 0 | 1): Promise<void> {
  const protocolVersion = V5 ? 5 : 4;
  const sock = net.connect(broker.port, broker.host);
  sock.setNoDelay(true);
  const parser = mqttPacket.parser({ protocolVersion });
  let acked = 0;
  let wanted = 0;
  let wake: (() => void) | undefined;
  const connected = new Promise<void>((resolve, reject) => {
    parser.on('packet', (p) => {
      if (p.cmd === 'connack') return p.returnCode || p.reasonCode ? reject(new Error('refused')) : resolve();
      if (p.cmd !== 'puback') return;
      acked++;
      if (wake && acked >= wanted) { const w = wake; wake = undefined; w(); }
    });
    sock.once('error', reject);
  });
  sock.on('data', (d) => parser.parse(d));
  const opts = { protocolVersion } as const;
  sock.write(mqttPacket.generate({ cmd: 'connect', protocolId: 'MQTT', protocolVersion, clean: true, clientId: `raw-${process.pid}-${Date.now()}`, keepalive: 60 }, opts));
  await connected;
  const ackedTo = (n: number) => (acked >= n ? undefined : new Promise<void>((r) => { wanted = n; wake = r; }));
  // over MQTT 5, what the notifier adds to each state message
  const properties = V5 ? { userProperties: { space, subject: 'state' } } : undefined;
  let id = 0;
  const frame = (topic: string, payload: string) => mqttPacket.generate({
    cmd: 'publish', topic, payload, qos, retain: true, dup: false, ...(qos ? { messageId: (id = (id % 65535) + 1) } : {}), ...(properties ? { properties } : {}),
  }, opts);
  const BATCH = 1000;
  for (let b = 0; b * BATCH < N; b++) {
    const parts: Buffer[] = [];
    for (let i = b * BATCH + 1; i <= Math.min(N, (b + 1) * BATCH); i++) {
      // as the notifier at its default (state_topics both): 3.3's JSON state, then the subtopics
      parts.push(frame(`${space}/lvar/bench/v`, JSON.stringify({ t: Date.now() / 1000, c: 'uc/bench', status: 1, value: String(i) })));
      parts.push(frame(`${space}/lvar/bench/v/status`, '1'));
      parts.push(frame(`${space}/lvar/bench/v/value`, String(i)));
    }
    if (qos) await ackedTo(3 * (b - 1) * BATCH);
    sock.write(Buffer.concat(parts));
    if (sock.writableNeedDrain) await new Promise((r) => sock.once('drain', r));
  }
  if (qos) await ackedTo(3 * N);
  sock.end(mqttPacket.generate({ cmd: 'disconnect' }, opts));
}

const BENCH_PLUGIN = benchUpdatePlugin('lvar:bench/v');

async function main(): Promise<void> {
  try {
    execFileSync('mosquitto', ['-h'], { stdio: 'ignore' });
  } catch (err) {
    // mosquitto -h exits 3 but runs; only a missing binary is a problem
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      console.error('mosquitto is not installed (apt-get install mosquitto): the MQTT benchmark needs it');
      process.exit(2);
    }
  }
  const cleanups: (() => unknown)[] = [];
  const owner = { teardown: (fn: () => unknown) => { cleanups.push(fn); } };
  try {
    // no per-client queue limit: the bench counts what the notifier delivers, not what the broker sheds
    const broker = await startBroker(owner, { kind: 'mosquitto', mosquittoConf: ['max_queued_messages 0'] });
    const notifier = (qos: 0 | 1) => JSON.stringify({
      id: `q${qos}`, type: 'mqtt', enabled: qos === 0, host: broker.host, port: broker.port, space: `ctl${qos}`, qos,
      events: [{ subject: 'state', types: ['#'], groups: ['#'] }], queue_size: N + 1000, max_batch: 1000,
      ...(V5 ? { protocol: '5' } : {}),
    });
    const c = await startController(undefined, {
      ini: process.env.BENCH_DB ? { server: { db_update: process.env.BENCH_DB } } : undefined,
      files: {
        'plugins/bench-items.js': BENCH_PLUGIN,
        'runtime/uc_notify.d/q0.json': notifier(0),
        'runtime/uc_notify.d/q1.json': notifier(1),
      },
    });
    cleanups.push(() => c.stop(), () => fs.rmSync(c.dir, { recursive: true, force: true }));
    const m = await startController(undefined, {
      ini: { server: { db_update: 'manual' } },
      files: { 'runtime/uc_notify.d/q0.json': notifier(0) },
    });
    cleanups.push(() => m.stop(), () => fs.rmSync(m.dir, { recursive: true, force: true }));
    const k = Keys.master;
    await c.client.ok('create', { k, i: 'lvar:bench/v' });
    await m.client.ok('create', { k, i: 'lvar:bench/v' });
    await m.client.ok('disable_notifier', { k, i: 'q0' });
    const rows: (string | number)[][] = [];
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const db = process.env.BENCH_DB ?? 'instant (default)';
    for (const qos of [0, 1] as const) {
      // one notifier at a time, so each run has the controller to itself
      await c.client.ok('enable_notifier', { k, i: `q${qos}` });
      await c.client.ok('disable_notifier', { k, i: `q${1 - qos}` });
      const raw: number[] = [];
      const ctl: number[] = [];
      const rawUs: number[] = [];
      const ctlUs: number[] = [];
      let delivered = 0;
      // QoS 0: the updates by JSON RPC batches, at the defaults (c) and under manual (m)
      const byApi = { instant: { rate: [] as number[], us: [] as number[], delivered: N }, manual: { rate: [] as number[], us: [] as number[], delivered: N } };
      // raw loop and notifier alternate; round 0 warms both up
      for (let round = 0; round <= ROUNDS; round++) {
        process.stderr.write(`… QoS ${qos}, round ${round}\n`);
        const r = await measure(broker.port, `raw${qos}/lvar/+/+/value`, qos, () => rawLoop(broker, `raw${qos}`, qos));
        const n = await measure(broker.port, `ctl${qos}/lvar/+/+/value`, qos, async () => {
          await c.client.ok('bench_update', { k, n: N });
        });
        {
          // the second controller (manual) has a QoS 0 notifier only
          for (const [name, ctlr] of qos === 0 ? [['instant', c], ['manual', m]] as const : [['instant', c]] as const) {
            if (ctlr === m) { await c.client.ok('disable_notifier', { k, i: 'q0' }); await m.client.ok('enable_notifier', { k, i: 'q0' }); }
            const bodies = updateBatches('lvar:bench/v', N, `${name}${round}`, k);
            const x = await measure(broker.port, `ctl${qos}/lvar/+/+/value`, qos, () => postBatches(ctlr.url, bodies));
            if (ctlr === m) { await m.client.ok('disable_notifier', { k, i: 'q0' }); await c.client.ok('enable_notifier', { k, i: 'q0' }); }
            if (round === 0) continue;
            process.stderr.write(`   JSON RPC batches, ${name}: ${x.rate.toFixed(0)}/s ${x.us.toFixed(1)} µs/event\n`);
            byApi[name].rate.push(x.rate);
            byApi[name].us.push(x.us);
            byApi[name].delivered = Math.min(byApi[name].delivered, x.count);
          }
        }
        if (round === 0) continue;
        process.stderr.write(`   raw ${r.rate.toFixed(0)}/s ${r.us.toFixed(1)} µs/event; notifier ${n.rate.toFixed(0)}/s ${n.us.toFixed(1)} µs/event\n`);
        raw.push(r.rate);
        ctl.push(n.rate);
        rawUs.push(r.us);
        ctlUs.push(n.us);
        delivered = Math.min(delivered || n.count, n.count);
      }
      rows.push([qos, `service (plugin), ${db}`, fmt(median(raw)), fmt(median(ctl)), fmt(median(ctl) / median(raw), 2), fmt(median(rawUs), 1), fmt(median(ctlUs), 1), `${delivered}/${N}`]);
      {
        for (const name of qos === 0 ? ['instant', 'manual'] as const : ['instant'] as const) {
          const x = byApi[name];
          rows.push([qos, `JSON RPC batches of 1 000, ${name === 'instant' ? 'instant (default)' : 'manual'}`, fmt(median(raw)), fmt(median(x.rate)), fmt(median(x.rate) / median(raw), 2), fmt(median(rawUs), 1), fmt(median(x.us), 1), `${x.delivered}/${N}`]);
        }
      }
    }
    console.log(`state events through mosquitto over MQTT ${V5 ? '5' : '3.1.1'}, ${N} per run (3 messages each: the JSON state, status, value)\n`);
    console.log(table(['QoS', 'updates by, db_update', 'raw batched loop (mqtt-packet), events/s', 'notifier, events/s', 'ratio', 'raw loop CPU µs/event', 'controller CPU µs/event', 'delivered'], rows));
    console.log(`\n${ROUNDS} alternating rounds after a warm-up, medians; targets: QoS 0 ≥ 0.9, QoS 1 ≥ 0.8; load average ${os.loadavg()[0].toFixed(1)}`);
  } finally {
    for (const fn of cleanups.reverse()) await fn();
  }
}

if (process.argv[2] === '--subscriber') {
  const [port, filter, n, qos] = process.argv.slice(3);
  void subscriberMain(Number(port), filter, Number(n), Number(qos) as 0 | 1);
} else {
  main().then(() => process.exit(0), (err) => { console.error(err); process.exit(1); });
}
