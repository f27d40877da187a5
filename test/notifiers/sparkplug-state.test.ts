import 'reflect-metadata';
import test from 'ava';
import { startBroker } from '../helpers/broker';
import { controllerWith } from '../helpers/mqtt-notifier';
import { controllerLog, stats } from '../helpers/notifiers';
import { SparkplugHost } from '../helpers/sparkplug-host';
import { NODE, sparkplugNotifier } from '../helpers/sparkplug-node';
import { until } from '../helpers/wait';
import { hostState } from '../../plugins/notifiers/sparkplug/host-state';

const HOST = 'scada';
const YEAR = 365 * 86_400_000;

/** A STATE as anyone on the broker can publish it (not retained): `state` as JSON text. */
async function forged(host: SparkplugHost, state: unknown): Promise<void> {
  await host.client.publishAsync(`spBv1.0/STATE/${HOST}`, JSON.stringify(state), { qos: 1 });
}

test('host STATE verdicts: timestamps valid or not, older, too far ahead, none after one', (t) => {
  const fresh = { timestamp: 0, timestamped: false };
  const seen = { timestamp: 1_000_000, timestamped: true };
  const now = 2_000_000;
  const ahead = 300_000;
  const j = (v: unknown) => Buffer.from(JSON.stringify(v));
  t.deepEqual(hostState(j({ online: true, timestamp: now }), seen, now, ahead), { kind: 'take', online: true, timestamp: now });
  // none taken yet: a state without a timestamp is taken (a host that sends none works)
  for (const ts of [undefined, null, '2000000', 0, -5, Number.NaN]) {
    t.deepEqual(hostState(j({ online: true, timestamp: ts }), fresh, now, ahead), { kind: 'take', online: true }, String(ts));
    t.like(hostState(j({ online: false, timestamp: ts }), seen, now, ahead), { kind: 'refused', what: 'a STATE without a timestamp after one with a timestamp' }, String(ts));
  }
  t.deepEqual(hostState(j({ online: false, timestamp: seen.timestamp - 1 }), seen, now, ahead), { kind: 'older' });
  t.deepEqual(hostState(j({ online: false, timestamp: seen.timestamp }), seen, now, ahead), { kind: 'take', online: false, timestamp: seen.timestamp });
  // ahead of the node's clock: up to the bound, taken (clocks differ a little); past it, refused
  t.like(hostState(j({ online: true, timestamp: now + ahead }), fresh, now, ahead), { kind: 'take' });
  t.like(hostState(j({ online: true, timestamp: now + ahead + 1 }), fresh, now, ahead), { kind: 'refused', what: 'a STATE timestamped too far ahead of this node\'s clock' });
  t.like(hostState(j({ online: true, timestamp: 1e300 }), seen, now, ahead), { kind: 'refused' });
  for (const bad of ['', 'ONLINE', '[]', 'null', '{"online":"true","timestamp":5}', '{"timestamp":5}']) {
    t.like(hostState(Buffer.from(bad), fresh, now, ahead), { kind: 'refused', what: 'not a STATE (JSON with a boolean "online")' }, bad);
  }
});

test('a STATE without a timestamp is taken until one with a timestamp came; after that it is refused and counted', async (t) => {
  const broker = await startBroker(t, { kind: 'mosquitto' });
  const host = await SparkplugHost.connect(t, broker, 'plant');
  await host.client.publishAsync(`spBv1.0/STATE/${HOST}`, JSON.stringify({ online: true }), { qos: 1, retain: true });
  const c = await controllerWith(t, { sp: sparkplugNotifier(broker, { primary_host_id: HOST }) }, { ini: { server: { log_repeat_interval: 1 } } });
  await c.ok('create', { i: 'sensor:g1/temp' });
  await host.until('born on a state without a timestamp', () => host.online(NODE) && host.value(NODE, 'g1', 'sensor/temp/status') !== undefined);

  // a timestamped offline: the node leaves
  await host.state(HOST, false);
  await host.until('NDEATH', () => !host.online(NODE));
  await until('connected again', async () => (await stats(c.client, c.k, 'sp')).connects === 2);
  // an online without a timestamp does not override it
  const n = host.messages.length;
  await forged(host, { online: true });
  await until('refused', async () => (await stats(c.client, c.k, 'sp')).host_states_refused === 1);
  let st = await stats(c.client, c.k, 'sp');
  t.false(st.host_online);
  t.false(st.born);
  // the host, timestamped: born again, and nothing was published in between
  await host.state(HOST, true);
  await host.until('born again', () => host.online(NODE));
  t.is(host.kinds(n)[0], 'NBIRTH');
  // and an offline without a timestamp does not end the session either
  await forged(host, { online: false });
  await until('refused again', async () => (await stats(c.client, c.k, 'sp')).host_states_refused === 2);
  st = await stats(c.client, c.k, 'sp');
  t.true(st.born);
  t.is(st.host_offline_disconnects, 1);
  t.regex(controllerLog(c.dir), /sparkplug edge1: host state refused: a STATE without a timestamp after one with a timestamp: online true \(from spBv1\.0\/STATE\/scada\)/);
  t.deepEqual(host.problems, []);
});

test('a STATE from the far future is refused and counted: the node still follows the real host', async (t) => {
  const broker = await startBroker(t, { kind: 'mosquitto' });
  const host = await SparkplugHost.connect(t, broker, 'plant');
  await host.state(HOST, true);
  const c = await controllerWith(t, { sp: sparkplugNotifier(broker, { primary_host_id: HOST }) });
  await c.ok('create', { i: 'sensor:g1/temp' });
  await host.until('born', () => host.online(NODE) && host.value(NODE, 'g1', 'sensor/temp/status') !== undefined);
  const bd = host.bdSeq(NODE)!;

  // offline, ten years ahead: taken, it would make every real state look older
  await forged(host, { online: false, timestamp: Date.now() + 10 * YEAR });
  await until('refused', async () => (await stats(c.client, c.k, 'sp')).host_states_refused === 1);
  let st = await stats(c.client, c.k, 'sp');
  t.true(st.born);
  t.true(st.host_online);
  t.true(host.online(NODE));
  t.regex(controllerLog(c.dir), /host state refused: a STATE timestamped too far ahead of this node's clock: online false, \d+ s ahead \(host_state_max_ahead 300 s\)/);

  // the real host goes offline and comes back: the node follows
  await host.state(HOST, false);
  const death = await host.until('NDEATH', () => host.messages.find((m) => m.kind === 'NDEATH'));
  t.is(death.metrics.find((m) => m.name === 'bdSeq')!.value, bd);
  await until('connected again', async () => (await stats(c.client, c.k, 'sp')).connects === 2);
  await host.state(HOST, true);
  await host.until('born again', () => host.online(NODE));
  t.is(host.bdSeq(NODE), bd + 1);
  st = await stats(c.client, c.k, 'sp');
  t.is(st.host_states_refused, 1);
  t.deepEqual(host.problems, []);
});
