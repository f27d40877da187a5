import 'reflect-metadata';
import test, { type ExecutionContext } from 'ava';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startBroker } from '../helpers/broker';
import { Keys, makeDir, spawnController } from '../helpers/controller';
import { controllerWith } from '../helpers/mqtt-notifier';
import { notifierFiles, stateEvent, stats } from '../helpers/notifiers';
import { keysIni } from '../helpers/keys';
import { SparkplugHost, Types } from '../helpers/sparkplug-host';
import { NODE, sparkplugNotifier } from '../helpers/sparkplug-node';
import { ITEM_PROBE_PLUGIN } from '../helpers/item-probe-plugin';
import { until } from '../helpers/wait';
import { decodePayload, encodePayload, encodeWithProtobufjs, DataType, type Payload } from '../../plugins/notifiers/sparkplug/payload';
import { valueType } from '../../plugins/notifiers/sparkplug/node';
import { readSparkplug } from '../../plugins/notifiers/sparkplug/settings';
import type { NotifierConfig } from '../../plugins/notifiers/contract';
import { PublishFrames } from '../../plugins/notifiers/mqtt/publish-frames';
import mqttPacket from 'mqtt-packet';


/** Keys of the command tests: `cmd` writes g1 only. */
const KEYS = keysIni({
  masterkey: { key: Keys.master, master: true, hosts_allow: ['0.0.0.0/0', '::/0'] },
  cmd: { key: 'cmdkeycmdkeycmdkeycmdkeycmdkeycmdkeycmdkeycmdkeycmdkeycmdkey1234', groups: 'g1/#', hosts_allow: '127.0.0.1' },
});

/** A broker, a host, and a controller whose node is born with one sensor of g1. */
async function bornWith(t: ExecutionContext, sensor: string) {
  const broker = await startBroker(t, { kind: 'mosquitto' });
  const host = await SparkplugHost.connect(t, broker, 'plant');
  const c = await controllerWith(t, { sp: sparkplugNotifier(broker) });
  await c.ok('create', { i: `sensor:g1/${sensor}` });
  await host.until('born', () => host.value(NODE, 'g1', `sensor/${sensor}/status`) !== undefined);
  return { host, c };
}

test('payload codec: the fields and data types round-trip, signed integers and null included', (t) => {
  const bytes = encodePayload({
    timestamp: 1700000000123, seq: 255, uuid: 'u', metrics: [
      { name: 'a', alias: 7, timestamp: 1700000000000, datatype: DataType.Int32, value: -5 },
      { name: 'b', datatype: DataType.Double, value: 1.5, is_historical: true },
      { name: 'c', datatype: DataType.Boolean, value: true, is_transient: true },
      { name: 'd', datatype: DataType.String, value: 'x' },
      { name: 'e', datatype: DataType.Int64, value: 2 ** 40 },
      { name: 'f', datatype: DataType.String, value: null },
    ],
  });
  const p = decodePayload(bytes);
  t.is(p.timestamp, 1700000000123);
  t.is(p.seq, 255);
  t.is(p.uuid, 'u');
  t.deepEqual(p.metrics, [
    { name: 'a', alias: 7, timestamp: 1700000000000, datatype: DataType.Int32, value: -5 },
    { name: 'b', datatype: DataType.Double, value: 1.5, is_historical: true },
    { name: 'c', datatype: DataType.Boolean, value: true, is_transient: true },
    { name: 'd', datatype: DataType.String, value: 'x' },
    { name: 'e', datatype: DataType.Int64, value: 2 ** 40 },
    { name: 'f', datatype: DataType.String, value: null, is_null: true },
  ]);
  t.is(DataType.Int64, 4);
  t.is(DataType.Double, 10);
  t.is(DataType.Boolean, 11);
  t.is(DataType.String, 12);
  t.throws(() => decodePayload(Buffer.from([0x12, 0xff])));
  t.is(valueType('12.5'), DataType.Double);
  t.is(valueType('e5'), DataType.String);
  t.is(valueType('Infinity'), DataType.String);
  t.is(valueType(' 7 '), DataType.Double);
  t.is(valueType('-3'), DataType.Double);
  t.is(valueType('true'), DataType.Boolean);
  t.is(valueType('on'), DataType.String);
  t.is(valueType(''), DataType.String);
  t.is(valueType(null), undefined);
});

test('payload writer: the same bytes as protobufjs writes, long metrics and texts, negative and large integers, floats', (t) => {
  const long = 'ü'.repeat(100);
  const samples: Payload[] = [
    { timestamp: 1700000000123, seq: 7, metrics: [] },
    { metrics: [{ alias: 1, timestamp: 2 ** 50 + 3, datatype: DataType.Int32, value: 0 }] },
    { metrics: [0x0fffffff, 0x10000000, 2 ** 32, 2 ** 53 - 1, 127, 128].map((n, i) => ({ alias: n, timestamp: i % 2 ? n : 1700000000123, datatype: DataType.Int64, value: n })) },
    {
      timestamp: Date.now(), seq: 0, uuid: 'x'.repeat(300), body: Buffer.from([1, 2, 3]), metrics: [
        { name: long, alias: 300, timestamp: 1, datatype: DataType.String, value: long.repeat(5) },
        { name: 'short', datatype: DataType.String, value: 'é'.repeat(42) },
        { name: 'n', datatype: DataType.Int64, value: -2 },
        { name: 'i8', datatype: DataType.Int8, value: -1 },
        { name: 'u32', datatype: DataType.UInt32, value: 2 ** 32 - 1 },
        { name: 'f', datatype: DataType.Float, value: 1.25 },
        { name: 'd', datatype: DataType.Double, value: -0.1, is_historical: true, is_transient: true },
        { name: 'b', datatype: DataType.Boolean, value: false },
        { name: 'nul', alias: 2, datatype: DataType.Double, value: null },
        { name: 'novalue', datatype: DataType.Double },
      ],
    },
  ];
  for (const p of samples) t.deepEqual([...encodePayload(p)], [...encodeWithProtobufjs(p)]);
  const back = decodePayload(encodePayload(samples[3]));
  t.is(back.metrics[0].value, long.repeat(5));
  t.is(back.metrics[2].value, -2);
  t.is(back.metrics[3].value, -1);
  t.is(back.uuid, 'x'.repeat(300));
});

for (const kind of ['mosquitto', 'aedes'] as const) {
  test(`${kind}: births, data by alias, a type change reborn, devices per group, seq and stats`, async (t) => {
    const broker = await startBroker(t, { kind });
    const host = await SparkplugHost.connect(t, broker, 'plant');
    const c = await controllerWith(t, { sp: sparkplugNotifier(broker) });
    await c.ok('create', { i: 'sensor:g1/temp' });
    await c.ok('create', { i: 'unit:g1/pump' });
    await c.ok('create', { i: 'lvar:g2/flag' });
    await c.ok('create', { i: 'sensor:other/x' }); // not subscribed: no metric
    await host.until('g1 and g2 born', () => host.value(NODE, 'g1', 'unit/pump/status') !== undefined && host.value(NODE, 'g2', 'lvar/flag/value') !== undefined);

    await c.ok('update', { i: 'sensor:g1/temp', s: 1, v: '21.5' });
    await host.until('a number', () => host.value(NODE, 'g1', 'sensor/temp/value') === 21.5);
    await c.ok('update', { i: 'sensor:g1/temp', s: 1, v: '22' });
    await host.until('another number', () => host.value(NODE, 'g1', 'sensor/temp/value') === 22);
    const data = host.messages.filter((m) => m.kind === 'DDATA');
    t.true(data.length > 0);
    t.true(data.every((m) => m.metrics.every((x) => x.name === undefined && x.alias !== undefined)), 'data by alias only');
    t.is(host.value(NODE, 'g1', 'sensor/temp/status'), 1);
    // by exception: the status stayed 1, so only the value went out
    const born = host.messages.filter((m) => m.kind === 'DBIRTH' && m.device === 'g1').at(-1)!;
    t.deepEqual(data.at(-1)!.metrics.map((m) => m.alias), [born.metrics.find((m) => m.name === 'sensor/temp/value')!.alias]);

    // a value of another type: the device is born again with the new data type
    const births = host.messages.filter((m) => m.kind === 'DBIRTH' && m.device === 'g1').length;
    await c.ok('update', { i: 'sensor:g1/temp', v: 'broken' });
    await host.until('a string', () => host.value(NODE, 'g1', 'sensor/temp/value') === 'broken');
    const last = host.messages.filter((m) => m.kind === 'DBIRTH' && m.device === 'g1');
    t.is(last.length, births + 1);
    t.is(last.at(-1)!.metrics.find((m) => m.name === 'sensor/temp/value')!.datatype, Types.String);
    await c.ok('update', { i: 'lvar:g2/flag', v: 'true' });
    await host.until('a boolean', () => host.value(NODE, 'g2', 'lvar/flag/value') === true);

    // a group without covered items dies
    await c.ok('destroy', { i: 'lvar:g2/flag' });
    await host.until('DDEATH g2', () => host.messages.some((m) => m.kind === 'DDEATH' && m.device === 'g2'));
    t.false(host.messages.some((m) => m.topic.includes('/other')), 'not subscribed');

    // more than 256 messages: seq wraps
    for (let i = 0; i < 300; i++) await c.ok('update', { i: 'sensor:g1/temp', v: `s${i}` });
    await host.until('the last', () => host.value(NODE, 'g1', 'sensor/temp/value') === 's299');
    t.deepEqual(host.problems, []);
    const st = await stats(c.client, c.k, 'sp');
    t.is(st.births, 1);
    t.true(st.device_births >= 3);
    t.is(st.device_deaths, 1);
    t.is(st.bdSeq, 0);
    t.is(st.seq, (host.messages.at(-1)!.seq! + 1) % 256);
  });
}

test('rebirth on NCMD; DCMD runs a unit action and sets a sensor with the command key; the rest is refused and counted', async (t) => {
  const broker = await startBroker(t, { kind: 'mosquitto' });
  const host = await SparkplugHost.connect(t, broker, 'plant');
  const c = await controllerWith(t, { sp: sparkplugNotifier(broker, { command_key: 'cmd' }) }, { keysIni: KEYS });
  await c.ok('create', { i: 'sensor:g1/temp' });
  await c.ok('create', { i: 'unit:g1/pump' });
  await c.ok('create', { i: 'unit:g2/valve' });
  await host.until('born', () => host.value(NODE, 'g2', 'unit/valve/status') !== undefined && host.value(NODE, 'g1', 'unit/pump/status') !== undefined);

  const before = host.messages.length;
  await host.command(NODE, '', [{ name: 'Node Control/Rebirth', datatype: Types.Boolean, value: true }]);
  await host.until('a new NBIRTH', () => host.messages.slice(before).some((m) => m.kind === 'NBIRTH'));
  await host.until('its DBIRTHs', () => host.kinds(before).filter((k) => k.startsWith('DBIRTH')).length >= 2);
  t.is(host.kinds(before)[0], 'NBIRTH');

  // a unit's status by name: its action runs; a sensor's value by alias: set
  const aliasOf = (device: string, name: string) => host.messages.filter((m) => m.kind === 'DBIRTH' && m.device === device).at(-1)!.metrics.find((m) => m.name === name)!.alias!;
  await host.command(NODE, 'g1', [{ name: 'unit/pump/status', datatype: Types.Int32, value: 1 }]);
  await host.command(NODE, 'g1', [{ alias: aliasOf('g1', 'sensor/temp/value'), datatype: Types.Double, value: 30 }]);
  await until('pump on', async () => (await c.ok('state', { i: 'unit:g1/pump' })).status === 1);
  await until('temp set', async () => (await c.ok('state', { i: 'sensor:g1/temp' })).value === '30');
  const results = await c.ok('result', { i: 'unit:g1/pump' });
  t.true(results.some((a: any) => a.nstatus === 1), 'ran as an action');
  await host.until('the host sees it', () => host.value(NODE, 'g1', 'unit/pump/status') === 1);

  // refused: the key may not write g2; no such metric; a status that is not an integer; undecodable
  await host.command(NODE, 'g2', [{ name: 'unit/valve/status', datatype: Types.Int32, value: 1 }]);
  await host.command(NODE, 'g1', [{ name: 'unit/nothing/status', datatype: Types.Int32, value: 1 }]);
  await host.command(NODE, 'g1', [{ name: 'unit/pump/status', datatype: Types.String, value: 'on' }]);
  await host.client.publishAsync(`spBv1.0/plant/DCMD/${NODE}/g1`, 'not protobuf', { qos: 1 });
  await until('4 refused', async () => (await stats(c.client, c.k, 'sp')).commands_refused === 4);
  const st = await stats(c.client, c.k, 'sp');
  t.is(st.commands_run, 2);
  t.is(st.rebirth_requests, 1);
  t.is(st.births, 2);
  t.is((await c.ok('state', { i: 'unit:g2/valve' })).status, 0);
  t.deepEqual(host.problems, []);
});

test('an event from the millisecond of the state a birth carried: an older one goes out historical, a newer one live', async (t) => {
  const { host, c } = await bornWith(t, 'ms');
  await c.ok('update', { i: 'sensor:g1/ms', s: 1, v: '5' });
  await host.until('5 live', () => host.value(NODE, 'g1', 'sensor/ms/value') === 5);
  // born again: the birth carries the state of the update
  const before = host.messages.length;
  await host.command(NODE, '', [{ name: 'Node Control/Rebirth', datatype: Types.Boolean, value: true }]);
  await host.until('reborn', () => host.messages.slice(before).some((m) => m.kind === 'DBIRTH' && m.device === 'g1'));
  const st = await c.ok('state', { i: 'sensor:g1/ms' });
  const born = host.messages.slice(before).find((m) => m.kind === 'DBIRTH' && m.device === 'g1')!.metrics.find((m) => m.name === 'sensor/ms/value')!;
  t.is(born.value, 5);
  // 0.3 ms either side of the state: the same millisecond on the wire, in the item's order one before, one after
  const at = (v: string, dt: number) => ({ ...stateEvent('sensor:g1/ms', 1, v), t: st.t + dt });
  t.is(Math.round((st.t - 0.0003) * 1000), Math.round(st.t * 1000));
  const after = host.messages.length;
  await c.ok('t_emit', { s: 'state', d: [at('4', -0.0003)] });
  await c.ok('t_emit', { s: 'state', d: [at('6', 0.0003)] });
  const data = () => host.messages.slice(after).filter((m) => m.kind === 'DDATA').flatMap((m) => m.metrics.filter((x) => x.alias === born.alias));
  await host.until('both', () => data().length >= 2);
  t.deepEqual(data().map((m) => [m.value, !!m.is_historical]), [[4, true], [6, false]]);
  t.is(host.value(NODE, 'g1', 'sensor/ms/value'), 6, 'the host holds the newer');
  t.deepEqual(host.problems, []);
});

test('items created one by one in one call: their device is born again a few times, not once per item', async (t) => {
  const { host, c } = await bornWith(t, 'first');
  const before = host.messages.length;
  const N = 300;
  const body = JSON.stringify(Array.from({ length: N }, (_, i) => ({ jsonrpc: '2.0', method: 'create', id: i, params: { k: c.k, i: `sensor:g1/s${i}` } })));
  const answers = await (await fetch(`${c.url}/jrpc`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body })).json() as { error?: unknown }[];
  t.true(answers.every((a) => !a.error));
  await host.until('every item born', () => host.value(NODE, 'g1', `sensor/s${N - 1}/status`) !== undefined && host.value(NODE, 'g1', 'sensor/s0/status') !== undefined);
  const births = host.kinds(before).filter((k) => k === 'DBIRTH/g1').length;
  t.true(births >= 1 && births < N / 3, `${births} DBIRTHs for ${N} items`);
  t.deepEqual(host.problems, []);
});

test('items created one by one, a call each 700 ms (slower than twice the first windows): the births\' window doubles while they keep coming (about one DBIRTH a second, not one per item)', async (t) => {
  const { host, c } = await bornWith(t, 'first');
  const before = host.messages.length;
  const N = 20;
  const began = Date.now();
  for (let i = 0; i < N; i++) {
    await c.ok('create', { i: `sensor:g1/slow${i}` });
    await new Promise((r) => setTimeout(r, 700));
  }
  const took = Date.now() - began;
  await host.until('every item born', () => host.value(NODE, 'g1', `sensor/slow${N - 1}/status`) !== undefined);
  const births = host.kinds(before).filter((k) => k === 'DBIRTH/g1').length;
  // the window doubles from 100 ms to 1 s (a few births), then a birth a second at most; a window that went
  // back to 100 ms whenever a call took longer than twice it gave one birth per item (20 in about 14 s; now 11)
  const most = 4 + Math.ceil(took / 1000);
  t.true(births >= 1 && births <= most, `${births} DBIRTHs for ${N} items in ${took} ms (at most ${most})`);
  t.deepEqual(host.problems, []);
});

test('publish frames: the bytes mqtt-packet writes for QoS 0 publications, 3.1.1 and 5, and the same messages for the client', (t) => {
  const topic = 'spBv1.0/plant/DDATA/edge1/sensor.g1.é';
  const payloads = [Buffer.alloc(0), Buffer.from('x'), Buffer.alloc(200, 7), Buffer.alloc(20_000, 9)];
  for (const protocolVersion of [4, 5] as const) {
    const frames = new PublishFrames(protocolVersion, 16);
    for (const p of payloads) frames.add(topic, Buffer.from(topic), p);
    t.is(frames.count, payloads.length);
    const { bytes, messages } = frames.take();
    t.is(frames.count, 0);
    const want = Buffer.concat(payloads.map((payload) => mqttPacket.generate({ cmd: 'publish', topic, payload, qos: 0, retain: false, dup: false, ...(protocolVersion === 5 ? { properties: {} } : {}) }, { protocolVersion })));
    t.deepEqual(bytes, want, `protocol ${protocolVersion}`);
    t.deepEqual(messages().map((m) => [m.topic, Buffer.from(m.payload).toString('hex'), m.qos, m.retain]), payloads.map((p) => [topic, p.toString('hex'), 0, false]));
    // what was taken stays as it was when the writer goes on
    frames.add(topic, Buffer.from(topic), Buffer.from('next'));
    t.deepEqual(bytes, want);
  }
});


for (const qos of [0, 1] as const) {
  test(`devices = item, QoS ${qos}: 300 items changed in one call, a DDATA each, in the order of the changes, seq on across them`, async (t) => {
    const broker = await startBroker(t, { kind: 'mosquitto' });
    const host = await SparkplugHost.connect(t, broker, 'plant');
    const c = await controllerWith(t, { sp: sparkplugNotifier(broker, { devices: 'item', qos }) }, { files: { 'plugins/itemsprobe.js': ITEM_PROBE_PLUGIN } });
    const N = 300;
    const body = JSON.stringify(Array.from({ length: N }, (_, i) => ({ jsonrpc: '2.0', method: 'create', id: i, params: { k: c.k, i: `sensor:g1/s${i}` } })));
    const answers = await (await fetch(`${c.url}/jrpc`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body })).json() as { error?: unknown }[];
    t.true(answers.every((a) => !a.error));
    const devices = Array.from({ length: N }, (_, i) => `sensor.g1.s${i}`);
    await host.until('every item born', () => devices.every((d) => host.value(NODE, d, 'status') !== undefined));
    for (const tag of ['a', 'b']) {
      const from = host.messages.length;
      const sent = (await stats(c.client, c.k, 'sp')).data_messages as number;
      await c.ok('probe_batches', { prefix: 'sensor:g1/s', n: 300, b: 1, tag });
      await host.until('every value', () => devices.every((d, i) => host.value(NODE, d, 'value') === `${tag}0.${i}`));
      const data = host.messages.slice(from).filter((m) => m.kind === 'DDATA');
      // the first round also changes the status (null → 1): two metrics; then the value alone
      t.deepEqual(data.map((m) => m.device), devices);
      t.true(data.every((m) => m.metrics.length === (tag === 'a' ? 2 : 1)));
      t.true(data.every((m, i) => m.seq === (data[0].seq! + i) % 256), 'seq one after the other, wrapping');
      // counted once the broker took them (QoS 1: acknowledged)
      await until('counted', async () => (await stats(c.client, c.k, 'sp')).data_messages === sent + N);
    }
    t.deepEqual(host.problems, []);
  });
}

test('message_max_bytes: a batch of one device split into several DDATA, seq on across them, every change once', async (t) => {
  const broker = await startBroker(t, { kind: 'mosquitto' });
  const host = await SparkplugHost.connect(t, broker, 'plant');
  const c = await controllerWith(t, { sp: sparkplugNotifier(broker, { message_max_bytes: 1024 }) }, { files: { 'plugins/itemsprobe.js': ITEM_PROBE_PLUGIN } });
  const N = 300;
  const body = JSON.stringify(Array.from({ length: N }, (_, i) => ({ jsonrpc: '2.0', method: 'create', id: i, params: { k: c.k, i: `sensor:g1/s${i}` } })));
  const answers = await (await fetch(`${c.url}/jrpc`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body })).json() as { error?: unknown }[];
  t.true(answers.every((a) => !a.error));
  await host.until('every item born', () => host.value(NODE, 'g1', `sensor/s${N - 1}/status`) !== undefined);
  const from = host.messages.length;
  await c.ok('probe_batches', { prefix: 'sensor:g1/s', n: 300, b: 1, tag: 'v' });
  await host.until('every value', () => Array.from({ length: N }, (_, i) => i).every((i) => host.value(NODE, 'g1', `sensor/s${i}/value`) === `v0.${i}`));
  const data = host.messages.slice(from).filter((m) => m.kind === 'DDATA');
  t.true(data.length >= 4, `${data.length} messages`);
  t.true(data.every((m, i) => m.seq === (data[0].seq! + i) % 256));
  // status and value of each item, once, in the order of the changes
  t.is(data.reduce((n, m) => n + m.metrics.length, 0), 2 * N);
  t.deepEqual(host.problems, []);
});

test('MQTT 5: every session starts clean with a session expiry of 0; another session_expiry is refused', (t) => {
  const cfg: NotifierConfig = { id: 'sp', type: 'sparkplug', enabled: true, events: [], host: '127.0.0.1', protocol: '5' };
  t.is(readSparkplug(cfg, os.tmpdir(), 'uc1').mqtt.sessionExpiry, 0);
  t.is(readSparkplug({ ...cfg, session_expiry: 0 }, os.tmpdir(), 'uc1').mqtt.protocol, 5);
  t.throws(() => readSparkplug({ ...cfg, session_expiry: 60 }, os.tmpdir(), 'uc1'), { message: /session_expiry must be 0/ });
});

test('commands need a command key: without one, writes are refused', async (t) => {
  const { host, c } = await bornWith(t, 'temp');
  const before = (await c.ok('state', { i: 'sensor:g1/temp' })).status;
  await host.command(NODE, 'g1', [{ name: 'sensor/temp/status', datatype: Types.Int32, value: 3 }]);
  await until('refused', async () => (await stats(c.client, c.k, 'sp')).commands_refused === 1);
  t.not(before, 3);
  t.is((await c.ok('state', { i: 'sensor:g1/temp' })).status, before);
  t.is((await stats(c.client, c.k, 'sp')).commands_run, 0);
});

test('SIGKILL: the broker sends the NDEATH will with the birth bdSeq; the next start is born with bdSeq + 1', async (t) => {
  const broker = await startBroker(t, { kind: 'mosquitto' });
  const host = await SparkplugHost.connect(t, broker, 'plant');
  const dir = makeDir(t, { files: notifierFiles({ sp: sparkplugNotifier(broker) }) });
  const ctl = await spawnController(t, dir);
  await ctl.client.ok('create', { k: Keys.master, i: 'sensor:g1/temp' });
  await host.until('born', () => host.online(NODE) && host.value(NODE, 'g1', 'sensor/temp/status') !== undefined);
  const bd = host.bdSeq(NODE)!;
  t.is(bd, 0);
  ctl.proc.kill('SIGKILL');
  await ctl.exited;
  const death = await host.until('NDEATH', () => host.messages.find((m) => m.kind === 'NDEATH'));
  t.is(death.metrics.find((m) => m.name === 'bdSeq')!.value, bd);
  t.false(host.online(NODE));
  t.is(fs.readFileSync(path.join(dir, 'runtime', 'uc_sparkplug_sp.bdseq'), 'utf8'), '0');

  const again = await spawnController(t, dir);
  await host.until('born again', () => host.online(NODE));
  t.is(host.bdSeq(NODE), bd + 1);
  // a clean stop sends NDEATH itself with the same bdSeq
  again.proc.kill('SIGTERM');
  await again.exited;
  await host.until('NDEATH of the second run', () => host.messages.filter((m) => m.kind === 'NDEATH').some((m) => m.metrics[0].value === bd + 1));
  t.false(host.online(NODE));
  t.deepEqual(host.problems, []);
});

test('primary host: nothing while it is offline, births when it comes online, then what happened meanwhile as historical data; offline again: NDEATH, a new connection, born with the next bdSeq', async (t) => {
  const broker = await startBroker(t, { kind: 'mosquitto' });
  const host = await SparkplugHost.connect(t, broker, 'plant', 'scada');
  await host.state('scada', false);
  const c = await controllerWith(t, { sp: sparkplugNotifier(broker, { primary_host_id: 'scada', store_max: 3 }) });
  await c.ok('create', { i: 'sensor:g1/temp' });
  for (let i = 1; i <= 5; i++) await c.ok('update', { i: 'sensor:g1/temp', s: 1, v: String(i) });
  await until('stored', async () => (await stats(c.client, c.k, 'sp')).stored === 6);
  let st = await stats(c.client, c.k, 'sp');
  t.is(st.stored_now, 3);
  t.is(st.store_dropped, 3);
  t.false(st.host_online);
  t.is(host.messages.length, 0, 'nothing published while the host is offline');

  await host.state('scada', true);
  await host.until('historical data', () => host.messages.some((m) => m.metrics.some((x) => x.is_historical)));
  t.deepEqual(host.kinds().slice(0, 3), ['NBIRTH', 'DBIRTH/g1', 'DDATA/g1']);
  // data names metrics by the alias their birth gave
  const valueAlias = (birth: number) => host.messages[birth].metrics.find((x) => x.name === 'sensor/temp/value')!.alias;
  const hist = host.messages[2].metrics.filter((x) => x.alias === valueAlias(1));
  t.deepEqual(hist.map((m) => m.value), [3, 4, 5]);
  t.true(hist.every((m) => m.is_historical));
  await c.ok('update', { i: 'sensor:g1/temp', v: '9' });
  await host.until('live data', () => host.value(NODE, 'g1', 'sensor/temp/value') === 9);
  const bd = host.bdSeq(NODE)!;
  t.is((await stats(c.client, c.k, 'sp')).connects, 1);

  // offline: the node's own NDEATH with the bdSeq of its birth, the connection closed and opened again
  const n = host.messages.length;
  await host.state('scada', false);
  const death = await host.until('NDEATH', () => host.messages.slice(n).find((m) => m.kind === 'NDEATH'));
  t.is(death.metrics.find((m) => m.name === 'bdSeq')!.value, bd);
  t.false(host.online(NODE));
  await until('connected again', async () => (await stats(c.client, c.k, 'sp')).connects === 2);
  st = await stats(c.client, c.k, 'sp');
  t.is(st.host_offline_disconnects, 1);
  t.is(st.deaths, 1);
  t.is(st.bdSeq, bd + 1, 'the will of the new connection holds the next bdSeq');
  t.false(st.born);

  // meanwhile: stored, nothing but deaths published
  await c.ok('update', { i: 'sensor:g1/temp', v: '10' });
  await c.ok('update', { i: 'sensor:g1/temp', v: '11' });
  await until('stored again', async () => (await stats(c.client, c.k, 'sp')).stored_now === 2);
  t.deepEqual(host.kinds(n).filter((k) => k !== 'NDEATH'), []);
  t.is(host.kinds(n).length, 1, 'one NDEATH: the DISCONNECT made the broker drop the will');

  // online again: born with the next bdSeq, then what was stored, historical
  const m = host.messages.length;
  await host.state('scada', true);
  await host.until('historical data again', () => host.messages.slice(m).some((x) => x.metrics.some((y) => y.is_historical)));
  t.deepEqual(host.kinds(m).slice(0, 3), ['NBIRTH', 'DBIRTH/g1', 'DDATA/g1']);
  t.is(host.bdSeq(NODE), bd + 1);
  t.true(host.online(NODE));
  t.deepEqual(host.messages[m + 2].metrics.filter((x) => x.alias === valueAlias(m + 1)).map((x) => x.value), [10, 11]);
  t.is((await stats(c.client, c.k, 'sp')).stored_now, 0);
  t.deepEqual(host.problems, []);
});

test('an expired command key writes nothing: the command is refused and counted', async (t) => {
  const broker = await startBroker(t, { kind: 'mosquitto' });
  const host = await SparkplugHost.connect(t, broker, 'plant');
  const expired = keysIni({
    masterkey: { key: Keys.master, master: true, hosts_allow: ['0.0.0.0/0', '::/0'] },
    cmd: { key: 'cmdkeycmdkeycmdkeycmdkeycmdkeycmdkeycmdkeycmdkeycmdkeycmdkey1234', groups: 'g1/#', hosts_allow: '127.0.0.1', expires: '2020-01-01T00:00:00Z' },
  });
  const c = await controllerWith(t, { sp: sparkplugNotifier(broker, { command_key: 'cmd' }) }, { keysIni: expired });
  await c.ok('create', { i: 'sensor:g1/temp' });
  await host.until('born', () => host.value(NODE, 'g1', 'sensor/temp/status') !== undefined);
  const before = (await c.ok('state', { i: 'sensor:g1/temp' })).status;
  await host.command(NODE, 'g1', [{ name: 'sensor/temp/status', datatype: Types.Int32, value: 3 }]);
  await until('refused', async () => (await stats(c.client, c.k, 'sp')).commands_refused === 1);
  t.is((await c.ok('state', { i: 'sensor:g1/temp' })).status, before);
  t.is((await stats(c.client, c.k, 'sp')).commands_run, 0);
});
