import 'reflect-metadata';
import os from 'node:os';
import { Readable } from 'node:stream';
import test from 'ava';
import fc from 'fast-check';
import { Subscriber } from '../helpers/broker';
import { startGatedBroker } from '../helpers/gated-broker';
import { until } from '../helpers/wait';
import { Connection } from '../../plugins/notifiers/mqtt/connection';
import { InFlightTable, OWN_IDS_FROM, takeAcks } from '../../plugins/notifiers/mqtt/acks';
import type { Outgoing } from '../../plugins/notifiers/mqtt/messages';
import { readSettings } from '../../plugins/notifiers/mqtt/settings';
import type { NotifierConfig } from '../../plugins/notifiers/contract';
import type { ModuleLogger } from '../../core/log';

/**
 * QoS 1 batches framed by the connection with ids of its own: their
 * PUBACKs are taken from the socket and matched in its table. A batch
 * resolves only once each of its messages is acknowledged, through a
 * broker restart too; the table is bounded in messages and bytes.
 */

const quiet: ModuleLogger = { debug() {}, info() {}, warning() {}, error() {}, critical() {}, log() {} };

function connection(t: { teardown(fn: () => unknown): void }, broker: { host: string; port: number }, id: string, inflight?: { count: number; bytes: number }): Connection {
  const s = readSettings({ id: 'q', type: 'mqtt', events: [], host: broker.host, port: broker.port, space: 'sp', qos: 1, timeout: 5 } as unknown as NotifierConfig, os.tmpdir());
  const conn = new Connection(s, quiet, id, 0, inflight);
  conn.start();
  t.teardown(() => conn.stop());
  return conn;
}

const batch = (from: number, n: number, payload = ''): Outgoing[] =>
  Array.from({ length: n }, (_, i) => ({ topic: `sp/m/${from + i}`, payload: `${from + i}${payload}`, qos: 1, retain: false }));

/** Whether a promise has settled by now (after the pending callbacks ran). */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  p.then(() => { done = true; }, () => { done = true; });
  await new Promise((r) => setImmediate(r));
  return done;
}

test('a broker restart with QoS 1 messages in flight: every one arrives, none is acknowledged before its PUBACK', async (t) => {
  const broker = await startGatedBroker(t);
  const conn = connection(t, broker, 'held-1');
  t.true(await conn.waitConnected(20_000));
  broker.close('held-'); // the broker takes our publications but neither passes them on nor acknowledges them
  const { acked } = await conn.publishBatch(batch(0, 200));
  await until('the batch held at the broker', () => broker.held === 200);
  t.is(conn.inflight.count, 200, 'in our own table');
  t.false(await settled(acked), 'nothing acknowledged yet');
  await broker.stop();
  await until('the connection lost', () => !conn.connected);
  t.false(await settled(acked), 'a drop acknowledges nothing');
  broker.open(); // the publications of the old connection are gone with it
  await broker.start();
  const sub = await Subscriber.connect(t, broker);
  await sub.subscribe('sp/m/#', 1);
  broker.close('held-'); // again held after the reconnect: still no PUBACK
  await until('reconnected', () => conn.connected, 20_000);
  await until('the batch being sent again, held', () => broker.held > 0, 20_000);
  t.false(await settled(acked), 'sent again, still unacknowledged');
  broker.open();
  await acked;
  await sub.waitFor((m) => new Set(m.map((x) => x.topic)).size === 200, 20_000, 'every message');
  t.is(conn.inflight.count, 0);
});

test('QoS 1 in flight is bounded in messages: a batch past the bound waits for acknowledgements', async (t) => {
  const broker = await startGatedBroker(t);
  const conn = connection(t, broker, 'held-2', { count: 10, bytes: 1 << 20 });
  t.true(await conn.waitConnected(20_000));
  broker.close('held-');
  const first = await conn.publishBatch(batch(0, 6));
  await until('the first batch held', () => broker.held === 6);
  const second = conn.publishBatch(batch(6, 6));
  await new Promise((r) => setTimeout(r, 300));
  t.false(await settled(second), '6 + 6 messages exceed the bound of 10: the second batch waits');
  t.is(broker.held, 6, 'and nothing of it went out');
  broker.open();
  await first.acked;
  await (await second).acked;
  t.is(conn.inflight.count, 0);
});

test('QoS 1 in flight is bounded in bytes; one batch alone always goes', async (t) => {
  const broker = await startGatedBroker(t);
  const conn = connection(t, broker, 'held-3', { count: 1000, bytes: 2000 });
  t.true(await conn.waitConnected(20_000));
  broker.close('held-');
  const big = 'x'.repeat(500);
  const first = await conn.publishBatch(batch(0, 5, big)); // 2 500 bytes: over the bound, but alone
  await until('the first batch held', () => broker.held === 5);
  const second = conn.publishBatch(batch(5, 1, big));
  await new Promise((r) => setTimeout(r, 300));
  t.false(await settled(second), 'past the bytes bound the next batch waits');
  broker.open();
  await first.acked;
  await (await second).acked;
  t.is(conn.inflight.bytes, 0);
});

/** A PUBACK of `id` (3.1.1, or 5 with a reason code). */
const puback = (id: number, code?: number) => Buffer.from(code === undefined ? [0x40, 2, id >> 8, id & 0xff] : [0x40, 3, id >> 8, id & 0xff, code]);

test('PUBACKs of ours are taken out of the broker\'s bytes however they are cut; everything else passes unchanged, in order', async (t) => {
  await fc.assert(fc.asyncProperty(fc.array(fc.integer({ min: 1, max: 60 }), { minLength: 1, maxLength: 30 }), async (cuts) => {
    const table = new InFlightTable(100, 1 << 20);
    const messages = batch(0, 3);
    let done = false;
    const { ids } = table.take(messages, 100, () => { done = true; }, () => undefined);
    const other = Buffer.concat([
      Buffer.from([0x30, 7, 0, 3, 0x61, 0x2f, 0x62, 0x68, 0x69]), // a PUBLISH a/b "hi"
      puback(5), // the client's own id: handed on
      Buffer.from([0xd0, 0]), // PINGRESP
    ]);
    const big = Buffer.concat([Buffer.from([0x30, 0x83, 0x01, 0, 1, 0x74]), Buffer.alloc(128, 0x7a)]); // remaining length of two bytes
    const wire = Buffer.concat([puback(ids[0]), other, puback(ids[1], 0x10), big, puback(ids[2], 0x87)]);
    const stream = new Readable({ read() {} });
    const acks: [number, number][] = [];
    const refused: string[] = [];
    takeAcks(stream, table, (id, code) => { acks.push([id, code]); table.ack(id, code, (topic) => refused.push(topic)); });
    const passed: Buffer[] = [];
    stream.on('data', (d: Buffer) => passed.push(d));
    let at = 0;
    for (const n of cuts) {
      if (at >= wire.length) break;
      stream.push(wire.subarray(at, at + n));
      at += n;
    }
    if (at < wire.length) stream.push(wire.subarray(at));
    await new Promise((r) => setImmediate(r));
    t.deepEqual(Buffer.concat(passed), Buffer.concat([other, big]));
    t.deepEqual(acks, [[ids[0], 0], [ids[1], 0x10], [ids[2], 0x87]]);
    t.deepEqual(refused, ['sp/m/2'], 'a reason code of 0x80 or more is a refusal');
    t.true(done && table.count === 0 && ids[0] >= OWN_IDS_FROM);
  }), { numRuns: 200 });
});
