import 'reflect-metadata';
import mqtt from 'mqtt';
import { startBroker } from '../helpers/broker';
import { startController, Keys } from '../helpers/controller';
import { notifierFiles } from '../helpers/notifiers';
import { encode, Types } from '../helpers/sparkplug-host';
import { table, fmt } from './lib';
import { DataType, encodePayload, type Metric } from '../../plugins/notifiers/sparkplug/payload';

/**
 * Sparkplug notifier speed, through mosquitto, the controller in this
 * process:
 *
 * - data: BATCHES batches of 1 000 `update` calls (a plugin calling the items
 *   service, one batch after the other, each a change of each of 1 000
 *   sensors of one group) become DDATA messages; their rate beside a raw
 *   loop that builds the same DDATA contents per batch (protobufjs) and
 *   publishes them with mqtt.js at the same QoS 0 to the same broker,
 *   yielding between batches as the plugin does. Target ≥ 0.8.
 * - birth: a rebirth request (NCMD) of a node with 5 000 items, 10 000
 *   metrics: the time from the request to the last DBIRTH at the host.
 *   Target under a second.
 *
 *   node dist/test/bench/sparkplug.js     (BENCH_SP_BATCHES, default 200; BENCH_ROUNDS, default 3)
 */
const BATCHES = Number(process.env.BENCH_SP_BATCHES ?? 200);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const GROUPS = 5;
const PER_GROUP = 1000;

const PLUGIN = `
module.exports.plugin = {
  name: 'bench-sp', kind: 'sysapi', version: '1.0.0', needs: ['items'],
  start(ctx) {
    ctx.register({ name: 'bench_sp', permission: 'master', description: 'batches of updates of g0',
      params: { b: { type: 'integer', required: true, description: 'batches' }, tag: { type: 'string', required: true, description: 'tag' } },
      async handler(p) {
        const items = ctx.service('items');
        for (let b = 0; b < p.b; b++) {
          for (let i = 0; i < ${PER_GROUP}; i++) items.update('sensor:g0/g0s' + i, { status: 1, value: p.tag + b + '.' + i });
          await new Promise((r) => setImmediate(r));
        }
        return true;
      } });
  },
};
`;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(): Promise<void> {
  const cleanup: (() => unknown)[] = [];
  const owner = { teardown: (fn: () => unknown) => { cleanup.push(fn); } };
  try {
    const broker = await startBroker(owner, { kind: 'mosquitto' });
    const files = notifierFiles({
      sp: { type: 'sparkplug', host: broker.host, port: broker.port, group_id: 'bench', edge_node_id: 'n1', timeout: 30, queue_size: 1_000_000, events: [{ subject: 'state', types: ['#'], groups: ['#'] }] },
    });
    files['plugins/bench-sp.js'] = PLUGIN;
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
    sub.on('message', (topic, payload) => {
      if (topic.includes('/DBIRTH/')) { dbirths++; lastBirth = performance.now(); return; }
      if (!topic.includes('/DDATA/') && !topic.startsWith('raw/')) return;
      count++;
      last = performance.now();
    });
    await sub.subscribeAsync(['spBv1.0/bench/#', 'raw/#'], { qos: 0 });
    const raw = await mqtt.connectAsync({ host: broker.host, port: broker.port, protocolVersion: 4, clean: true, log: () => {} });
    cleanup.push(() => raw.endAsync(true));

    const sent = async () => (await c.client.ok('get_notifier', { k, i: 'sp' })).stats;
    const settle = async (want: () => boolean) => { while (!want()) await new Promise((r) => setTimeout(r, 20)); };

    const rows: (string | number)[][] = [];
    const ratios: number[] = [];
    // warm-up, then rounds
    for (let round = 0; round <= ROUNDS; round++) {
      const events = BATCHES * PER_GROUP;
      const base = await sent();
      count = 0;
      const t0 = performance.now();
      await c.client.ok('bench_sp', { k, b: BATCHES, tag: `r${round}.` });
      // every event handed to the node, then every message it published arrived
      let st = await sent();
      while (st.sent - base.sent < events) {
        await new Promise((r) => setTimeout(r, 20));
        st = await sent();
      }
      const published = st.data_messages - base.data_messages;
      await settle(() => count >= published);
      const nodeMsgs = count;
      const nodeEnd = last;
      const nodeRate = nodeMsgs / ((nodeEnd - t0) / 1000);

      // the raw loop: the same DDATA contents (1 000 sensors' status and value, by alias, with times) encoded and published per batch
      count = 0;
      const r0 = performance.now();
      for (let b = 0; b < BATCHES; b++) {
        const metrics: Metric[] = [];
        const t = Date.now();
        for (let i = 0; i < PER_GROUP; i++) {
          metrics.push({ alias: 2 * i + 1, datatype: DataType.Int32, timestamp: t, value: 1 }, { alias: 2 * i + 2, datatype: DataType.String, timestamp: t, value: `x${round}.${b}.${i}` });
        }
        raw.publish('raw/bench/DDATA', Buffer.from(encodePayload({ timestamp: t, metrics, seq: b % 256 })), { qos: 0 });
        if (raw.stream.writableNeedDrain) await new Promise((r) => raw.stream.once('drain', r));
        await new Promise((r) => setImmediate(r));
      }
      await settle(() => count >= BATCHES);
      const rawRate = BATCHES / ((last - r0) / 1000);
      if (round === 0) continue;
      ratios.push(nodeRate / rawRate);
      rows.push([round, nodeMsgs, fmt(nodeRate), fmt(events / ((nodeEnd - t0) / 1000)), fmt(rawRate), fmt(nodeRate / rawRate, 2)]);
    }
    console.log(`Data: ${BATCHES} batches of ${PER_GROUP} updates per round, QoS 0, mosquitto`);
    console.log(table(['round', 'DDATA messages', 'node msg/s', 'node updates/s', 'raw mqtt.js msg/s', 'ratio'], rows));
    console.log(`median ratio ${fmt(median(ratios), 2)} (target ≥ 0.8)`);

    // the same updates with the notifier disabled: what the items service and the bus cost alone
    await c.client.ok('disable_notifier', { k, i: 'sp' });
    const alone: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const t0 = performance.now();
      await c.client.ok('bench_sp', { k, b: BATCHES, tag: `d${i}.` });
      alone.push((BATCHES * PER_GROUP) / ((performance.now() - t0) / 1000));
    }
    console.log(`updates/s with the notifier disabled (the update path alone): ${alone.map((x) => fmt(x)).join(', ')}; median ${fmt(median(alone))}`);
    await c.client.ok('enable_notifier', { k, i: 'sp' });

    const births: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      dbirths = 0;
      const t0 = performance.now();
      await sub.publishAsync('spBv1.0/bench/NCMD/n1', encode([{ name: 'Node Control/Rebirth', datatype: Types.Boolean, value: true }]), { qos: 1 });
      await settle(() => dbirths >= GROUPS);
      births.push(lastBirth - t0);
    }
    console.log(`\nBirth of ${GROUPS * PER_GROUP * 2} metrics (NBIRTH + ${GROUPS} DBIRTH), request to last DBIRTH: ${births.map((b) => fmt(b)).join(', ')} ms; median ${fmt(median(births))} ms (target < 1000)`);
  } finally {
    for (const fn of cleanup.reverse()) await fn();
  }
}

main().then(() => process.exit(0), (err) => { console.error(err); process.exit(1); });
