import 'reflect-metadata';
import crypto from 'node:crypto';
import mqtt from 'mqtt';
import type { ExecutionContext } from 'ava';
import { encode } from '@msgpack/msgpack';
import { packed, unpacked } from '../../core/http/encode';
import { timestampCodec } from '../../core/toolkit/msgpack';
import { startBroker } from '../helpers/broker';
import { Keys } from '../helpers/controller';
import { open33, seal33 } from '../helpers/mqtt-api-client';
import { controllerWith, mqttNotifier } from '../helpers/mqtt-notifier';
import { until } from '../helpers/wait';
import { SUITE_PLUGIN } from './plugin';
import test from 'ava';
import { FC, fc, jsonValue, same, testProp } from './fast-check';

/**
 * The MQTT API end to end (a broker, a controller with api_enabled, a raw
 * client): a generated MessagePack value sent to echo_value in a binary
 * frame comes back in the sealed answer as /jrpc answers it (64-bit
 * integers, timestamps to the nanosecond: one MessagePack for every
 * transport); frames made of any bytes, or sealed with the right key around
 * bytes that are no MessagePack, are dropped and counted, and the API
 * answers the next frame.
 */
const BASE = 'sp/controller/uc/testhost/api';

/** What the broker, client and controller leave to clean up: done once every property ran. */
const cleanups: (() => unknown)[] = [];
const owner = { teardown: (fn: () => unknown) => { cleanups.push(fn); } } as unknown as ExecutionContext;
testProp.after.always(async () => { for (const fn of cleanups.reverse()) await fn(); });

async function setup(t: ExecutionContext) {
  const broker = await startBroker(t);
  const client = await mqtt.connectAsync({ host: broker.host, port: broker.port, protocolVersion: 4, reconnectPeriod: 0 });
  t.teardown(() => client.endAsync(true));
  const got = new Map<string, Buffer>();
  client.on('message', (topic, payload) => got.set(topic.slice(`${BASE}/response/`.length), payload));
  await client.subscribeAsync(`${BASE}/response/#`, { qos: 1 });
  const c = await controllerWith(t, { m1: mqttNotifier(broker, { api_enabled: true, events: [] }) }, { files: { 'plugins/conformance.js': SUITE_PLUGIN } });
  const stats = async () => (await c.ok('get_notifier', { i: 'm1' }) as { stats: { connected: boolean; api: { dropped: number; bad_frames: number } } }).stats;
  await until('connected', async () => (await stats()).connected, 10_000);
  const send = (payload: Buffer) => client.publishAsync(`${BASE}/request`, payload, { qos: 1 });
  /** a request in a binary frame, its answer opened */
  const call = async (request: Buffer) => {
    const rid = crypto.randomBytes(16);
    await send(Buffer.concat([Buffer.from([0, 2]), Buffer.from('masterkey'), Buffer.from([0]), seal33(Keys.master, Buffer.concat([rid, request]))]));
    const a = await until(`answer ${rid.toString('hex')}`, () => got.get(rid.toString('hex')), 10_000);
    return unpacked(open33(Keys.master, a.subarray(2)));
  };
  const jrpc = async (request: Buffer) => {
    const r = await fetch(`${c.url}/jrpc`, { method: 'POST', headers: { 'Content-Type': 'application/msgpack', 'X-Auth-Key': Keys.master }, body: request });
    return unpacked(Buffer.from(await r.arrayBuffer()));
  };
  const dropped = async () => (await stats()).api;
  return { c, send, call, jrpc, dropped };
}

let api: ReturnType<typeof setup> | undefined;

/** MessagePack values: JSON's, and what JSON has not (64-bit integers, timestamps of any bits, bytes). */
const value = fc.oneof(
  jsonValue(2),
  fc.bigInt({ min: -(2n ** 53n) + 1n, max: 2n ** 53n - 1n }).map((n) => ({ int64: n })),
  fc.oneof(...[4, 8, 12].map((n) => fc.uint8Array({ minLength: n, maxLength: n }))).map((b) => ({ ts: unpacked(Buffer.concat([Buffer.from(b.length === 12 ? [0xc7, 12, 0xff] : [b.length === 4 ? 0xd6 : 0xd7, 0xff]), b])) })),
  fc.uint8Array({ maxLength: 30 }),
);

testProp.serial(`${FC} › MQTT API › a value in a binary frame comes back as /jrpc answers it`, [value, fc.integer({ min: 1, max: 1e6 })], async (t, v, id) => {
  const a = await (api ??= setup(owner));
  // a bigint written as a 64-bit integer (a number goes in the fewest bytes), a timestamp as the bytes it came as
  const request = Buffer.from(encode({ jsonrpc: '2.0', method: 'echo_value', params: { v }, id }, { useBigInt64: true, extensionCodec: timestampCodec }));
  same(t, await a.call(request), await a.jrpc(request));
}, { numRuns: 60 });

testProp.serial(`${FC} › MQTT API › frames of any bytes, or sealed around no MessagePack, are dropped and counted; the next frame is answered`, [
  fc.uint8Array({ maxLength: 80 }), fc.uint8Array({ maxLength: 40 }),
], async (t, junk, notPacked) => {
  const a = await (api ??= setup(owner));
  const before = await a.dropped();
  await a.send(Buffer.concat([Buffer.from([0, 2]), Buffer.from(junk)]));
  const rid = crypto.randomBytes(16);
  let isPacked = true;
  try { unpacked(notPacked); } catch { isPacked = false; }
  if (!isPacked) await a.send(Buffer.concat([Buffer.from([0, 2]), Buffer.from('masterkey'), Buffer.from([0]), seal33(Keys.master, Buffer.concat([rid, notPacked]))]));
  const request = Buffer.from(packed({ jsonrpc: '2.0', method: 'echo_value', params: { v: 1 }, id: 7 }));
  same(t, await a.call(request), { jsonrpc: '2.0', id: 7, result: { v: 1 } });
  const after = await a.dropped();
  t.is(after.dropped - before.dropped, isPacked ? 1 : 2);
}, { numRuns: 40 });

test.serial(`${FC} › MQTT API › found: a timestamp in a binary frame came back to the millisecond`, async (t) => {
  const a = await (api ??= setup(owner));
  // echo_value of [1 s + 1 ns as a 96-bit timestamp, 2^53 - 1 as a 64-bit integer]
  const TS = 'c70cff000000010000000000000001';
  const v = [unpacked(Buffer.from(TS, 'hex')), 2n ** 53n - 1n];
  const request = Buffer.from(encode({ jsonrpc: '2.0', method: 'echo_value', params: { v }, id: 1 }, { useBigInt64: true, extensionCodec: timestampCodec }));
  const answer = await a.call(request) as { result: { v: [unknown, unknown] } };
  // the timestamp as it came (it was a Date of 1.000 s), the integer as the number it is
  t.is(packed(answer.result.v[0]).toString('hex'), TS);
  t.is(Number(answer.result.v[1]), 2 ** 53 - 1);
});
