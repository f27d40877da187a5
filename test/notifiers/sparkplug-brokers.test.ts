import 'reflect-metadata';
import test from 'ava';
import { startBroker, type Broker } from '../helpers/broker';
import { controllerWith } from '../helpers/mqtt-notifier';
import { controllerLog, stats } from '../helpers/notifiers';
import { SparkplugHost } from '../helpers/sparkplug-host';
import { NODE, sparkplugNotifier } from '../helpers/sparkplug-node';
import { needs } from '../helpers/tools';
import { until } from '../helpers/wait';
import { readSparkplug } from '../../plugins/notifiers/sparkplug/settings';
import type { NotifierConfig } from '../../plugins/notifiers/contract';

/**
 * A Sparkplug edge node given several MQTT servers (Sparkplug 3.0, 5.10):
 * one at a time, the primary host's STATE on the current one decides
 * whether it stays, NBIRTH with a new bdSeq on each server it comes to.
 * Two real mosquitto brokers.
 */
const HOST = 'scada';
const mosq = needs('mosquitto');
const list = (...brokers: Broker[]) => brokers.map((b) => `${b.host}:${b.port}`).join(',');
const NDEATHS = (h: SparkplugHost) => h.messages.filter((m) => m.kind === 'NDEATH');
const bdSeqOf = (m: { metrics: { name?: string; value?: unknown }[] }) => m.metrics.find((x) => x.name === 'bdSeq')!.value;

/** Two brokers, a host application on each (its STATE retained there as `online` says, none when undefined). */
async function twoServers(t: Parameters<typeof startBroker>[0], online: [boolean | undefined, boolean | undefined]) {
  const a = await startBroker(t, { kind: 'mosquitto' });
  const b = await startBroker(t, { kind: 'mosquitto' });
  const hostA = await SparkplugHost.connect(t, a, 'plant');
  const hostB = await SparkplugHost.connect(t, b, 'plant');
  if (online[0] !== undefined) await hostA.state(HOST, online[0]);
  if (online[1] !== undefined) await hostB.state(HOST, online[1]);
  return { a, b, hostA, hostB };
}

test('host_state_wait is read and checked; a bad server list is refused as for mqtt', (t) => {
  const cfg = (extra: Record<string, unknown>) => ({ id: 'sp', type: 'sparkplug', events: [], host: 'a,b:1884', ...extra }) as unknown as NotifierConfig;
  const s = readSparkplug(cfg({}), '/tmp', 'node');
  t.deepEqual(s.mqtt.brokers, [{ host: 'a', port: 1883 }, { host: 'b', port: 1884 }]);
  t.is(s.hostStateWait, 10);
  t.is(readSparkplug(cfg({ host_state_wait: 0.5 }), '/tmp', 'node').hostStateWait, 0.5);
  t.throws(() => readSparkplug(cfg({ host_state_wait: 0 }), '/tmp', 'node'), { message: 'host_state_wait must be a number from 0.1 to 3600' });
  t.throws(() => readSparkplug(cfg({ host: 'a,,b' }), '/tmp', 'node'), { message: /^host: an empty broker entry \(entry 2 of "a,,b"\)/ });
  t.throws(() => readSparkplug(cfg({ host: 'a:99999' }), '/tmp', 'node'), { message: /^host: bad port "99999" in "a:99999"/ });
});

mosq('the primary host offline on the server the node is on: NDEATH there, then the next server, NBIRTH there with the next bdSeq', async (t) => {
  const { a, b, hostA, hostB } = await twoServers(t, [true, true]);
  const c = await controllerWith(t, { sp: sparkplugNotifier(a, { host: list(a, b), primary_host_id: HOST }) });
  await c.ok('create', { i: 'sensor:g1/temp' });
  await c.ok('update', { i: 'sensor:g1/temp', s: 1, v: '20' });
  await hostA.until('born on a', () => hostA.online(NODE) && hostA.value(NODE, 'g1', 'sensor/temp/value') === 20);
  const bd = hostA.bdSeq(NODE)!;
  // one server at a time: nothing on b
  t.is(hostB.messages.length, 0);
  let st = await stats(c.client, c.k, 'sp');
  t.like(st, { broker: list(a), broker_index: 0, server_walks: 0, born: true });

  await hostA.state(HOST, false);
  // the node's own NDEATH on a, with the bdSeq of its birth there
  const death = await hostA.until('NDEATH on a', () => NDEATHS(hostA)[0]);
  t.is(bdSeqOf(death), bd);
  t.false(hostA.online(NODE));
  await hostB.until('born on b', () => hostB.online(NODE));
  t.is(hostB.kinds()[0], 'NBIRTH', 'the first message on b is NBIRTH');
  t.is(hostB.bdSeq(NODE), (bd + 1) % 256, 'the next bdSeq, that of the connection to b');
  // data goes to b now, not to a
  const onA = hostA.messages.length;
  await c.ok('update', { i: 'sensor:g1/temp', v: '21' });
  await hostB.until('the value on b', () => hostB.value(NODE, 'g1', 'sensor/temp/value') === 21);
  t.is(hostA.messages.length, onA);
  st = await stats(c.client, c.k, 'sp');
  t.like(st, { broker: list(b), broker_index: 1, server_walks: 1, broker_switches: 1, born: true, host_online: true, connects: 2 });
  t.regex(controllerLog(c.dir), new RegExp(`sparkplug edge1: primary host scada is not on ${list(a).replace(/\./g, '\\.')} \\(its STATE says offline\\): moving to ${list(b).replace(/\./g, '\\.')}`));

  // b's host goes offline in turn: round robin, back to a, where the host is online again
  await hostA.state(HOST, true);
  const births = hostA.messages.filter((m) => m.kind === 'NBIRTH').length;
  await hostB.state(HOST, false);
  await hostB.until('NDEATH on b', () => NDEATHS(hostB).length === 1);
  await hostA.until('born on a again', () => hostA.messages.filter((m) => m.kind === 'NBIRTH').length === births + 1);
  t.is(hostA.bdSeq(NODE), (bd + 2) % 256);
  st = await stats(c.client, c.k, 'sp');
  t.like(st, { broker: list(a), broker_index: 0, server_walks: 2 });
  t.deepEqual([...hostA.problems, ...hostB.problems], []);
});

mosq('a server whose STATE is offline when the node comes is left at once; one without a STATE after host_state_wait', async (t) => {
  // a: offline retained; b: no STATE at all; then the host comes online on a
  const { a, b, hostA, hostB } = await twoServers(t, [false, undefined]);
  const c = await controllerWith(t, { sp: sparkplugNotifier(a, { host: list(a, b), primary_host_id: HOST, host_state_wait: 1 }) });
  await until('walked a, then b, twice round', async () => (await stats(c.client, c.k, 'sp')).server_walks >= 4, 60_000);
  // never born anywhere: no host to be born for
  t.false(hostA.messages.some((m) => m.kind === 'NBIRTH'));
  t.false(hostB.messages.some((m) => m.kind === 'NBIRTH'));
  t.regex(controllerLog(c.dir), /is not on .* \(its STATE says offline\): moving to/);
  t.regex(controllerLog(c.dir), /is not on .* \(no online STATE within host_state_wait 1 s\): moving to/);
  await hostA.state(HOST, true);
  await hostA.until('born on a, once the host is there', () => hostA.online(NODE), 60_000);
  const st = await stats(c.client, c.k, 'sp');
  t.like(st, { broker: list(a), broker_index: 0, born: true });
  // every connection had its own bdSeq, the birth that of the connection it was made on
  const bds = NDEATHS(hostA).map(bdSeqOf) as number[];
  t.true(bds.every((x) => x !== hostA.bdSeq(NODE)));
  t.deepEqual([...hostA.problems, ...hostB.problems], []);
});

mosq('the server the node is on goes away: the node connects to the next and is born there', async (t) => {
  const { a, b, hostA, hostB } = await twoServers(t, [true, true]);
  const c = await controllerWith(t, { sp: sparkplugNotifier(a, { host: list(a, b), primary_host_id: HOST }) });
  await c.ok('create', { i: 'sensor:g1/temp' });
  await hostA.until('born on a', () => hostA.online(NODE));
  const bd = hostA.bdSeq(NODE)!;
  await a.stop();
  await hostB.until('born on b', () => hostB.online(NODE), 60_000);
  t.is(hostB.kinds()[0], 'NBIRTH');
  t.is(hostB.bdSeq(NODE), (bd + 1) % 256);
  const st = await stats(c.client, c.k, 'sp');
  t.like(st, { broker: list(b), broker_index: 1, server_walks: 0, broker_switches: 1 });
  t.deepEqual(hostB.problems, []);
});

mosq('one server, as before: the primary host offline ends the session and the node connects to the same server again', async (t) => {
  const broker = await startBroker(t, { kind: 'mosquitto' });
  const host = await SparkplugHost.connect(t, broker, 'plant');
  await host.state(HOST, true);
  const c = await controllerWith(t, { sp: sparkplugNotifier(broker, { primary_host_id: HOST, host_state_wait: 0.5 }) });
  await c.ok('create', { i: 'sensor:g1/temp' });
  await host.until('born', () => host.online(NODE));
  const bd = host.bdSeq(NODE)!;
  await host.state(HOST, false);
  await host.until('NDEATH', () => !host.online(NODE));
  await until('connected again', async () => (await stats(c.client, c.k, 'sp')).connects === 2);
  // it waits there for the host, whatever host_state_wait says: there is no other server to go to
  await new Promise((r) => setTimeout(r, 1500));
  let st = await stats(c.client, c.k, 'sp');
  t.like(st, { broker: list(broker), broker_index: 0, server_walks: 0, broker_switches: 0, connects: 2, born: false });
  await host.state(HOST, true);
  await host.until('born again', () => host.online(NODE));
  t.is(host.bdSeq(NODE), bd + 1);
  st = await stats(c.client, c.k, 'sp');
  t.is(st.connects, 2);
  t.deepEqual(host.problems, []);
});
