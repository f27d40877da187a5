import 'reflect-metadata';
import fs from 'node:fs';
import inspector from 'node:inspector';
import mqtt from 'mqtt';
import { startBroker } from '../helpers/broker';
import { startController, Keys } from '../helpers/controller';
import { notifierFiles } from '../helpers/notifiers';
import { decode, encode, Types } from '../helpers/sparkplug-host';
import { ITEM_PROBE_PLUGIN } from '../helpers/item-probe-plugin';
import { table, fmt } from './lib';
import { DataType, decodePayload, encodeProtobufjsObject, encodeWithProtobufjs, PayloadWriter, protobufjsObject, type Metric } from '../../plugins/notifiers/sparkplug/payload';

/**
 * Sparkplug notifier speed, through mosquitto, the controller in this
 * process:
 *
 * - data: BATCHES batches of 1 000 `update` calls (a plugin calling the items
 *   service, one batch after the other, each a change of each of 1 000
 *   sensors of one group) become data messages, in the three layouts of
 *   the node: `devices = group` (one DDATA of 1 000 metrics per batch),
 *   `devices = item` (1 000 DDATA of one metric per batch: a message per
 *   update) and `devices = node` (one NDATA of 1 000 metrics per batch). Their rate beside a raw loop that publishes the very payloads
 *   the node published in that round (captured by the subscriber: the same
 *   count, the same bytes, the same order, already encoded) with mqtt.js at
 *   the same QoS 0 to the same broker, yielding after each batch's messages
 *   as the updates do. The ratio is the raw loop's time over the node's.
 *   Target ≥ 0.8.
 * - birth: a rebirth request (NCMD) of a node with 5 000 items, 10 000
 *   metrics: the time from the request to the last DBIRTH at the host.
 *   Target under a second.
 *
 *   node dist/test/bench/sparkplug.js     (BENCH_SP_BATCHES, default 200; BENCH_ROUNDS, default 3;
 *   BENCH_SP_LAYOUT=group, item or node: that layout only; BENCH_SP_PROFILE=file.cpuprofile: a CPU profile from the first
 *   measured round on, with the time windows of the node's rounds in the file)
 */
const BATCHES = Number(process.env.BENCH_SP_BATCHES ?? 200);
const PROFILE = process.env.BENCH_SP_PROFILE;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const GROUPS = 5;
const PER_GROUP = 1000;


/** The V8 profiler of this process, for the measured part only. */
async function startProfiler() {
  const session = new inspector.Session();
  session.connect();
  const post = (method: string, params?: object) => new Promise<any>((resolve, reject) => session.post(method, params ?? {}, (err, r) => (err ? reject(err) : resolve(r))));
  await post('Profiler.enable');
  // the node's rounds, on the profiler's clock (µs, monotonic), so that a reader can leave the rest out
  const windows: number[] = [];
  return {
    start: () => post('Profiler.start'),
    mark: () => { windows.push(Number(process.hrtime.bigint() / 1000n)); },
    async stop(file: string) {
      const { profile } = await post('Profiler.stop');
      fs.writeFileSync(file, JSON.stringify({ ...profile, windows }));
      session.disconnect();
    },
  };
}

/** CPU seconds (user and system, every thread) since a `process.cpuUsage()`. */
const cpuSince = (c0: NodeJS.CpuUsage) => { const d = process.cpuUsage(c0); return (d.user + d.system) / 1e6; };

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/**
 * The encoding alone, in this process, no broker: a DDATA of 1 000 sensors'
 * changes as the node wrote it before (an object per metric, status and
 * value, then protobufjs) beside the payload writer (the same 2 000 metrics,
 * then only the 1 000 values that changed, as the node sends them now).
 */
function encoding(): void {
  const values = Array.from({ length: PER_GROUP }, (_, i) => `r1.${i}.${i}`);
  const t = Date.now();
  const w = new PayloadWriter();
  const time = (fn: (k: number) => void) => {
    const xs: number[] = [];
    for (let r = 0; r < 7; r++) {
      const t0 = performance.now();
      for (let k = 0; k < 100; k++) fn(k);
      xs.push((performance.now() - t0) / 100);
    }
    return median(xs);
  };
  const objects = time((k) => {
    const metrics: Metric[] = [];
    for (let i = 0; i < PER_GROUP; i++) {
      metrics.push({ alias: 2 * i + 1, datatype: DataType.Int32, timestamp: t, value: 1 }, { alias: 2 * i + 2, datatype: DataType.String, timestamp: t, value: values[i] });
    }
    Buffer.from(encodeWithProtobufjs({ timestamp: t, metrics, seq: k % 256 }));
  });
  const written = (both: boolean) => time((k) => {
    w.begin(t);
    for (let i = 0; i < PER_GROUP; i++) {
      if (both) { w.open(undefined, 2 * i + 1, t, DataType.Int32); w.value(DataType.Int32, 1); }
      w.open(undefined, 2 * i + 2, t, DataType.String);
      w.value(DataType.String, values[i]);
    }
    w.finish(k % 256);
  });
  console.log(`\nEncoding a DDATA of ${PER_GROUP} changes (ms, median of 7 × 100): metric objects + protobufjs ${fmt(objects, 3)}; ` +
    `payload writer, status and value ${fmt(written(true), 3)}; payload writer, the changed values only ${fmt(written(false), 3)}`);
}

/** A layout of the node on the same updates: its notifier, its edge node id, what a message carries. */
interface Layout { id: string; node: string; devices: 'group' | 'item' | 'node'; what: string }
const LAYOUTS: Layout[] = [
  { id: 'sp', node: 'n1', devices: 'group', what: 'devices = group: a batch of 1 000 updates of one group, one DDATA of 1 000 metrics' },
  { id: 'spi', node: 'n2', devices: 'item', what: 'devices = item: a batch of 1 000 updates of 1 000 items, 1 000 DDATA of one metric' },
  { id: 'spn', node: 'n3', devices: 'node', what: 'devices = node: a batch of 1 000 updates, one NDATA of 1 000 metrics' },
];
/** the layouts measured: BENCH_SP_LAYOUT=group, item or node, one of them; every one by default */
const RUN = LAYOUTS.filter((l) => !process.env.BENCH_SP_LAYOUT || l.devices === process.env.BENCH_SP_LAYOUT);

async function main(): Promise<void> {
  const cleanup: (() => unknown)[] = [];
  const owner = { teardown: (fn: () => unknown) => { cleanup.push(fn); } };
  try {
    const broker = await startBroker(owner, { kind: 'mosquitto' });
    const common = { type: 'sparkplug', host: broker.host, port: broker.port, group_id: 'bench', timeout: 30, queue_size: 1_000_000, events: [{ subject: 'state', types: ['#'], groups: ['#'] }] };
    // one layout enabled at a time: the other gets no events
    const files = notifierFiles(Object.fromEntries(LAYOUTS.map((l, i) => [l.id, { ...common, edge_node_id: l.node, devices: l.devices, enabled: i === 0 }])));
    files['plugins/itemsprobe.js'] = ITEM_PROBE_PLUGIN;
    const c = await startController(undefined, { files });
    cleanup.push(() => c.stop());
    const k = Keys.master;
    for (let g = 0; g < GROUPS; g++) {
      const body = JSON.stringify(Array.from({ length: PER_GROUP }, (_, i) => ({ jsonrpc: '2.0', method: 'create', id: i, params: { k, i: `sensor:g${g}/g${g}s${i}` } })));
      const r = await (await fetch(`${c.url}/jrpc`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body })).json() as { error?: unknown }[];
      const bad = r.find((x) => x.error);
      if (bad) throw new Error(`create: ${JSON.stringify(bad)}`);
    }

    const sub = await mqtt.connectAsync({ host: broker.host, port: broker.port, protocolVersion: 4, clean: true });
    cleanup.push(() => sub.endAsync(true));
    let count = 0;
    let last = 0;
    let dbirths = 0;
    let lastBirth = 0;
    /** the data topics of the layout measured */
    let dataTopic = 'spBv1.0/bench/DDATA/n1/';
    /** what the node published as data this round, in order: the raw loop sends the very same */
    let captured: { topic: string; payload: Buffer }[] = [];
    sub.on('message', (topic, payload) => {
      if (topic.includes('/DBIRTH/')) { dbirths++; lastBirth = performance.now(); return; }
      if (topic.startsWith(dataTopic)) captured.push({ topic, payload });
      else if (!topic.startsWith('spBv1.0/rawlp/')) return;
      count++;
      last = performance.now();
    });
    await sub.subscribeAsync(['spBv1.0/bench/#', 'spBv1.0/rawlp/#'], { qos: 0 });
    const raw = await mqtt.connectAsync({ host: broker.host, port: broker.port, protocolVersion: 4, clean: true, log: () => {} });
    cleanup.push(() => raw.endAsync(true));

    const stats = async (id: string) => (await c.client.ok('get_notifier', { k, i: id })).stats;
    const settle = async (want: () => boolean) => { while (!want()) await new Promise((r) => setTimeout(r, 20)); };
    const profiler = PROFILE ? await startProfiler() : undefined;
    const us = (x: number) => fmt(x * 1e6, 1);

    /** per layout: CPU seconds of this process (every thread) per message of the node, the pre-encoded raw loop and the encoding raw loop, per round */
    const cpuPerMessage = new Map<Layout, { node: number; raw: number; enc: number; updates: number }[]>();
    for (const [li, layout] of RUN.entries()) {
      if (layout !== LAYOUTS[0]) {
        // this layout's node alone, born, and its births over
        for (const l of LAYOUTS) if (l !== layout) await c.client.ok('disable_notifier', { k, i: l.id });
        await c.client.ok('enable_notifier', { k, i: layout.id });
        let st = await stats(layout.id);
        while (!st.born) { await new Promise((r) => setTimeout(r, 50)); st = await stats(layout.id); }
        await new Promise((r) => setTimeout(r, 500));
      }
      dataTopic = layout.devices === 'node' ? `spBv1.0/bench/NDATA/${layout.node}` : `spBv1.0/bench/DDATA/${layout.node}/`;
      const rows: (string | number)[][] = [];
      const ratios: number[] = [];
      const encRatios: number[] = [];
      const cpu: { node: number; raw: number; enc: number; updates: number }[] = [];
      cpuPerMessage.set(layout, cpu);
      // warm-up, then rounds
      for (let round = 0; round <= ROUNDS; round++) {
        const events = BATCHES * PER_GROUP;
        const base = await stats(layout.id);
        count = 0;
        captured = [];
        if (round === 1 && li === 0) await profiler?.start();
        if (round > 0) profiler?.mark();
        const c0 = process.cpuUsage();
        const t0 = performance.now();
        await c.client.ok('probe_batches', { k, prefix: 'sensor:g0/g0s', n: PER_GROUP, b: BATCHES, tag: `${layout.id}r${round}.` });
        // every event handed to the node, then every message it published arrived
        let st = await stats(layout.id);
        while (st.sent - base.sent < events) {
          await new Promise((r) => setTimeout(r, 20));
          st = await stats(layout.id);
        }
        const published = st.data_messages - base.data_messages;
        await settle(() => count >= published);
        const nodeEnd = last;
        const nodeSecs = (nodeEnd - t0) / 1000;
        const nodeCpu = cpuSince(c0);
        if (round > 0) profiler?.mark();
        if (round === ROUNDS && li === RUN.length - 1) await profiler?.stop(PROFILE!);
        const payloads = captured;
        const msgs = payloads.length;
        if (msgs !== published) throw new Error(`${layout.id}: the node published ${published} data messages, the subscriber saw ${msgs}`);
        const bytes = payloads.reduce((n, m) => n + m.payload.length, 0);
        const metrics = payloads.reduce((n, m) => n + decode(m.payload).metrics.length, 0);
        // the raw loops yield where the updates did: after each batch's messages (group: each message)
        const perYield = Math.max(1, Math.round(msgs / BATCHES));

        // the raw loop: the very payloads the node published this round, in the same order, on topics of the same length,
        // with mqtt.js at QoS 0, pausing while the socket is full
        count = 0;
        const rc0 = process.cpuUsage();
        const r0 = performance.now();
        for (let i = 0; i < msgs; i++) {
          const m = payloads[i];
          raw.publish(m.topic.replace('/bench/', '/rawlp/'), m.payload, { qos: 0 });
          if (raw.stream.writableNeedDrain) await new Promise((r) => raw.stream.once('drain', r));
          if ((i + 1) % perYield === 0) await new Promise((r) => setImmediate(r));
        }
        await settle(() => count >= msgs);
        const rawSecs = (last - r0) / 1000;
        const rawCpu = cpuSince(rc0);

        // the raw loop that encodes: the same payloads, as protobufjs objects made beforehand, encoded by protobufjs
        // (its reflected, code-generated Payload type) and published; its bytes must be the node's
        const objects = payloads.map((m) => protobufjsObject(decodePayload(m.payload)));
        count = 0;
        const ec0 = process.cpuUsage();
        const e0 = performance.now();
        for (let i = 0; i < msgs; i++) {
          const bytes = encodeProtobufjsObject(objects[i]);
          if (Buffer.compare(bytes, payloads[i].payload) !== 0) throw new Error(`the raw loop's payload ${i} is not the node's`);
          raw.publish(payloads[i].topic.replace('/bench/', '/rawlp/'), Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length), { qos: 0 });
          if (raw.stream.writableNeedDrain) await new Promise((r) => raw.stream.once('drain', r));
          if ((i + 1) % perYield === 0) await new Promise((r) => setImmediate(r));
        }
        await settle(() => count >= msgs);
        const encSecs = (last - e0) / 1000;
        const encCpu = cpuSince(ec0);
        if (round === 0) continue;
        ratios.push(rawSecs / nodeSecs);
        encRatios.push(encSecs / nodeSecs);
        cpu.push({ node: nodeCpu / msgs, raw: rawCpu / msgs, enc: encCpu / msgs, updates: events / msgs });
        rows.push([round, msgs, fmt(bytes / msgs), fmt(metrics / msgs), fmt(msgs / nodeSecs), fmt(metrics / nodeSecs), fmt(events / nodeSecs),
          fmt(msgs / rawSecs), fmt(rawSecs / nodeSecs, 2), fmt(msgs / encSecs), fmt(encSecs / nodeSecs, 2)]);
      }
      console.log(`\nData, ${layout.what}: ${BATCHES} batches of ${PER_GROUP} updates per round, QoS 0, mosquitto`);
      console.log(table(['round', 'data messages', 'bytes/msg', 'metrics/msg', 'node msg/s', 'node metrics/s', 'node updates/s',
        'raw (pre-encoded) msg/s', 'ratio', 'raw (protobufjs encode) msg/s', 'ratio'], rows));
      console.log(`median ratio to the pre-encoded raw loop ${fmt(median(ratios), 2)}, to the encoding raw loop ${fmt(median(encRatios), 2)} (target ≥ 0.8)`);
    }

    // the same updates with every layout disabled: what the items service and the bus cost alone
    for (const l of LAYOUTS) await c.client.ok('disable_notifier', { k, i: l.id });
    const alone: number[] = [];
    const aloneCpu: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      await c.client.ok('probe_batches', { k, prefix: 'sensor:g0/g0s', n: PER_GROUP, b: BATCHES, tag: `d${i}.` });
      alone.push((BATCHES * PER_GROUP) / ((performance.now() - t0) / 1000));
      aloneCpu.push(cpuSince(c0) / (BATCHES * PER_GROUP));
    }
    const cpuUpdate = median(aloneCpu);
    console.log(`\nupdates/s with the notifier disabled (the update path alone): ${alone.map((x) => fmt(x)).join(', ')}; median ${fmt(median(alone))}; ` +
      `CPU ${fmt(cpuUpdate * 1e6, 2)} µs per update`);
    // the node's CPU per message less what the batch's updates cost alone: the notifier's own share, beside the raw loops
    // (CPU, not wall time: on a shared machine wall time moves with the other work far more than CPU time does)
    for (const layout of RUN) {
      const cpuRows = cpuPerMessage.get(layout)!.map((p, i) => {
        const own = p.node - p.updates * cpuUpdate;
        return [i + 1, us(p.node), us(p.updates * cpuUpdate), us(own), us(p.raw), us(p.enc), fmt(p.raw / p.node, 2), fmt(p.enc / p.node, 2), fmt(p.enc / own, 2)];
      });
      console.log(`\nCPU of this process per message, ${layout.what} (µs; the subscriber counting them is in every column):`);
      console.log(table(['round', 'node', 'its updates alone', 'notifier share', 'raw pre-encoded', 'raw encoding', 'ratio pre-encoded', 'ratio encoding', 'encoding / notifier share'], cpuRows));
    }
    await c.client.ok('enable_notifier', { k, i: 'sp' });
    let st = await stats('sp');
    while (!st.born) { await new Promise((r) => setTimeout(r, 50)); st = await stats('sp'); }

    const births: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      dbirths = 0;
      const t0 = performance.now();
      await sub.publishAsync('spBv1.0/bench/NCMD/n1', encode([{ name: 'Node Control/Rebirth', datatype: Types.Boolean, value: true }]), { qos: 1 });
      await settle(() => dbirths >= GROUPS);
      births.push(lastBirth - t0);
    }
    console.log(`\nBirth of ${GROUPS * PER_GROUP * 2} metrics (NBIRTH + ${GROUPS} DBIRTH), request to last DBIRTH: ${births.map((b) => fmt(b)).join(', ')} ms; median ${fmt(median(births))} ms (target < 1000)`);
    encoding();
  } finally {
    for (const fn of cleanup.reverse()) await fn();
  }
}

main().then(() => process.exit(0), (err) => { console.error(err); process.exit(1); });
