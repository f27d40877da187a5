import 'reflect-metadata';
import test from 'ava';
import { startBroker } from '../helpers/broker';
import { startGatedBroker } from '../helpers/gated-broker';
import { controllerWith } from '../helpers/mqtt-notifier';
import { controllerLog, stats } from '../helpers/notifiers';
import { SparkplugHost, Types, encode } from '../helpers/sparkplug-host';
import { loggedCount, NODE, sparkplugNotifier } from '../helpers/sparkplug-node';
import { until } from '../helpers/wait';
import { RebirthGate } from '../../plugins/notifiers/sparkplug/rebirth';
import { readSparkplug } from '../../plugins/notifiers/sparkplug/settings';
import { sparkplugType } from '../../plugins/notifiers/sparkplug';
import type { NotifierConfig } from '../../plugins/notifiers/contract';

const REBIRTH = { name: 'Node Control/Rebirth', datatype: Types.Boolean, value: true };

/** NBIRTHs and DBIRTHs the host saw from message `from` on. */
function births(host: SparkplugHost, from: number): { node: number; devices: number } {
  const kinds = host.kinds(from);
  return { node: kinds.filter((k) => k === 'NBIRTH').length, devices: kinds.filter((k) => k.startsWith('DBIRTH')).length };
}

/**
 * Every publication the node queued before this call has reached the host:
 * a change made now goes out after them (one chain of publications), so
 * once the host has it, nothing queued earlier is still to come.
 */
async function settled(host: SparkplugHost, c: Awaited<ReturnType<typeof controllerWith>>, tag: string): Promise<void> {
  await c.ok('update', { i: 'sensor:g1/temp', v: tag });
  await host.until(`the marker ${tag}`, () => host.value(NODE, 'g1', 'sensor/temp/value') === tag);
}

test('one NCMD holding 200 Node Control/Rebirth metrics makes one rebirth: one NBIRTH and a DBIRTH per device', async (t) => {
  const broker = await startBroker(t, { kind: 'mosquitto' });
  const host = await SparkplugHost.connect(t, broker, 'plant');
  const c = await controllerWith(t, { sp: sparkplugNotifier(broker) });
  await c.ok('create', { i: 'sensor:g1/temp' });
  await c.ok('create', { i: 'sensor:g2/x' });
  await host.until('born', () => host.value(NODE, 'g1', 'sensor/temp/status') !== undefined && host.value(NODE, 'g2', 'sensor/x/status') !== undefined);
  const before = host.messages.length;
  const ncmd = encode(Array.from({ length: 200 }, () => REBIRTH));
  await host.client.publishAsync(`spBv1.0/plant/NCMD/${NODE}`, ncmd, { qos: 1 });
  // whatever births the command makes are queued as it is taken, before the marker's data
  await until('a rebirth', async () => (await stats(c.client, c.k, 'sp')).births >= 2);
  await settled(host, c, 'after');
  t.log(`an NCMD of ${ncmd.length} bytes: ${host.kinds(before).filter((k) => k.includes('BIRTH')).join(' ')}`);
  t.deepEqual(births(host, before), { node: 1, devices: 2 });
  const st = await stats(c.client, c.k, 'sp');
  t.is(st.births, 2);
  // one request per command, not one per metric
  t.is(st.rebirth_requests, 1);
  t.is(st.rebirths_coalesced, 0);
  t.is(st.rebirths_limited, 0);
  t.is(st.commands_refused, 0);
  t.deepEqual(host.problems, []);
});

test('rebirth NCMDs arriving while a rebirth runs are coalesced into one more', async (t) => {
  const broker = await startGatedBroker(t);
  const host = await SparkplugHost.connect(t, broker, 'plant');
  // QoS 1: a birth runs until the broker acknowledges it; rebirth_max out of the way
  const c = await controllerWith(t, { sp: sparkplugNotifier(broker, { qos: 1, rebirth_max: 1000 }) });
  await c.ok('create', { i: 'sensor:g1/temp' });
  await host.until('born', () => host.value(NODE, 'g1', 'sensor/temp/status') !== undefined);
  const before = host.messages.length;
  // the node's publications are held: the rebirth the first command starts runs until the gate opens
  broker.close('sparkplug-');
  await host.command(NODE, '', [REBIRTH]);
  await until('the rebirth running (its NBIRTH held)', () => broker.held > 0);
  const N = 50;
  for (let i = 0; i < N; i++) await host.command(NODE, '', [REBIRTH]);
  await until('every command taken', async () => (await stats(c.client, c.k, 'sp')).rebirth_requests === N + 1);
  let st = await stats(c.client, c.k, 'sp');
  t.is(st.rebirths_coalesced, N - 1, 'the first of the burst queued one more rebirth, the rest joined it');
  broker.open();
  await settled(host, c, 'after');
  t.deepEqual(births(host, before), { node: 2, devices: 2 });
  st = await stats(c.client, c.k, 'sp');
  t.is(st.births, 3);
  t.is(st.rebirths_limited, 0);
  t.deepEqual(host.problems, []);
});

test('past rebirth_max in rebirth_window, rebirths asked for are counted and not run; logged once, then counted', async (t) => {
  const broker = await startBroker(t, { kind: 'mosquitto' });
  const host = await SparkplugHost.connect(t, broker, 'plant');
  const c = await controllerWith(t, { sp: sparkplugNotifier(broker, { rebirth_max: 2, rebirth_window: 3600 }) }, { ini: { server: { log_repeat_interval: 1 } } });
  await c.ok('create', { i: 'sensor:g1/temp' });
  await host.until('born', () => host.value(NODE, 'g1', 'sensor/temp/status') !== undefined);
  const before = host.messages.length;
  // one at a time, each after the last is done: none coalesced
  for (let i = 1; i <= 6; i++) {
    await host.command(NODE, '', [REBIRTH]);
    await until(`request ${i} taken`, async () => (await stats(c.client, c.k, 'sp')).rebirth_requests === i);
    await settled(host, c, `m${i}`);
  }
  t.deepEqual(births(host, before), { node: 2, devices: 2 });
  const st = await stats(c.client, c.k, 'sp');
  t.is(st.births, 3);
  t.is(st.rebirths_limited, 4);
  t.is(st.rebirths_coalesced, 0);
  const lines = () => controllerLog(c.dir).split('\n').filter((l) => l.includes('rebirth'));
  await until('the four in the log\'s count', () => loggedCount(lines()) === 4);
  t.regex(lines()[0], /rebirth refused: more than rebirth_max 2 asked for in rebirth_window 3600 s/);
  t.deepEqual(host.problems, []);
});

test('rebirth gate: a request while one is queued joins it; at most max per window, counted from its first', (t) => {
  const g = new RebirthGate(2, 1000);
  t.is(g.ask(5000), 'run');
  t.is(g.ask(5001), 'coalesced');
  t.is(g.ask(5002), 'coalesced');
  g.begun();
  t.is(g.ask(5003), 'run');
  g.begun();
  t.is(g.ask(5004), 'limited');
  t.is(g.ask(5999), 'limited');
  t.is(g.ask(6000), 'run', 'a new window');
  g.begun();
  t.is(g.ask(6001), 'run');
  g.begun();
  t.is(g.ask(6002), 'limited');
  // a clock set back starts a new window rather than waiting for the old one
  t.is(g.ask(1000), 'run');
});

test('rebirth_max, rebirth_window and host_state_max_ahead: defaults, and a clear error for a value out of range', (t) => {
  const cfg = (extra: Record<string, unknown>) => ({ id: 'sp', type: 'sparkplug', enabled: true, host: '127.0.0.1', events: [], ...extra }) as unknown as NotifierConfig;
  const s = readSparkplug(cfg({}), '.', 'node');
  t.like(s, { rebirthMax: 10, rebirthWindow: 60, hostStateMaxAhead: 300 });
  t.like(readSparkplug(cfg({ rebirth_max: 3, rebirth_window: 0.5e4, host_state_max_ahead: 0 }), '.', 'node'), { rebirthMax: 3, rebirthWindow: 5000, hostStateMaxAhead: 0 });
  for (const [field, value] of [['rebirth_max', 0], ['rebirth_max', 1.5], ['rebirth_max', 'many'], ['rebirth_window', 0], ['host_state_max_ahead', -1]] as const) {
    t.throws(() => sparkplugType.validate!(cfg({ [field]: value })), { message: new RegExp(`^${field} must be a (whole )?number from`) }, `${field} ${value}`);
  }
});
