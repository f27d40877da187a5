import test from 'ava';
import { startBroker, Subscriber } from '../helpers/broker';
import { until } from '../helpers/wait';
import { controllerWith, mqttNotifier } from '../helpers/mqtt-notifier';

// m1 publishes the state of group g only: items of group mk keep what the test's own client retained
const stateOfG = [{ subject: 'state', types: ['#'], groups: ['g'] }];

/**
 * A marker bound to m1 last: the test's client retained status 5 on its topic before, so once the
 * marker has taken it, the broker has handed over what it retained for every earlier subscription of
 * m1's connection (it answers one connection's subscriptions in order).
 */
async function marker(c: Awaited<ReturnType<typeof controllerWith>>, ext: Subscriber, name: string): Promise<void> {
  await ext.publish(`sp/sensor/mk/${name}/status`, '5', 1, true);
  await c.ok('create', { i: `sensor:mk/${name}` });
  await c.ok('set_prop', { i: `sensor:mk/${name}`, p: 'mqtt_update', v: 'm1' });
  await until(`marker ${name}`, async () => (await c.ok('state', { i: `sensor:mk/${name}` })).status === 5, 15_000);
}

test('create, bind to mqtt_update, update at once: the state retained before the update never overwrites it', async (t) => {
  const broker = await startBroker(t);
  const ext = await Subscriber.connect(t, broker);
  const c = await controllerWith(t, { m1: mqttNotifier(broker, { events: stateOfG }) });
  const n = 10;
  for (let i = 0; i < n; i++) {
    const oid = `sensor:g/s${i}`;
    // create publishes status 0 (retained); the binding subscribes; the update follows at once
    await c.ok('create', { i: oid });
    await c.ok('set_prop', { i: oid, p: 'mqtt_update', v: 'm1' });
    await c.ok('update', { i: oid, s: 1, v: '7' });
  }
  await marker(c, ext, 'm');
  const states = await Promise.all(Array.from({ length: n }, (_, i) => c.ok('state', { i: `sensor:g/s${i}` })));
  t.deepEqual(states.map((s) => [s.status, s.value]), Array.from({ length: n }, () => [1, '7']));
  // (whether the old status came back as the broker's retained state or as our own late echo depends on
  // the broker's timing: both are ignored; updates_stale counts the first kind, see the JSON test)
});

test('a retained state is applied when the item did not change since it was bound (a sensor\'s last value)', async (t) => {
  const broker = await startBroker(t);
  const ext = await Subscriber.connect(t, broker);
  await ext.publish('sp/sensor/mk/s/status', '3', 1, true);
  await ext.publish('sp/sensor/mk/s/value', '21.5', 1, true);
  const c = await controllerWith(t, { m1: mqttNotifier(broker, { events: stateOfG }) });
  await c.ok('create', { i: 'sensor:mk/s' });
  await c.ok('set_prop', { i: 'sensor:mk/s', p: 'mqtt_update', v: 'm1' });
  await until('the retained state applied', async () => {
    const s = await c.ok('state', { i: 'sensor:mk/s' });
    return s.status === 3 && s.value === '21.5';
  }, 15_000);
  t.is((await c.ok('get_notifier', { i: 'm1' })).stats.updates_stale, 0);
});

test('the JSON state of EVA ICS 3.3 on the item topic: applied, unless its time t is older than the item\'s state', async (t) => {
  const broker = await startBroker(t);
  const ext = await Subscriber.connect(t, broker);
  const c = await controllerWith(t, { m1: mqttNotifier(broker, { events: stateOfG }) });
  await c.ok('create', { i: 'sensor:g/j' });
  await c.ok('set_prop', { i: 'sensor:g/j', p: 'mqtt_update', v: 'm1' });
  await marker(c, ext, 'm');
  const now = () => Date.now() / 1000;
  await ext.publish('sp/sensor/g/j', JSON.stringify({ status: 2, value: 'a', t: now(), c: 'uc/other' }));
  await until('JSON state', async () => { const s = await c.ok('state', { i: 'sensor:g/j' }); return s.status === 2 && s.value === 'a'; }, 15_000);
  const { t: at } = await c.ok('state', { i: 'sensor:g/j' });
  // late: made before the state the item has now
  await ext.publish('sp/sensor/g/j', JSON.stringify({ status: 9, value: 'old', t: at - 10 }));
  // without a time 3.3's state is taken as it comes (timestamp_enabled off); null keeps the value
  await ext.publish('sp/sensor/g/j', JSON.stringify({ status: 4, value: null, t: null }));
  await until('status 4', async () => (await c.ok('state', { i: 'sensor:g/j' })).status === 4, 15_000);
  t.is((await c.ok('state', { i: 'sensor:g/j' })).value, 'a');
  await ext.publish('sp/sensor/g/j', 'not json');
  await ext.publish('sp/sensor/g/j', JSON.stringify({ status: 6, t: now() + 1 }));
  await until('status 6', async () => (await c.ok('state', { i: 'sensor:g/j' })).status === 6, 15_000);
  t.is((await c.ok('get_notifier', { i: 'm1' })).stats.updates_stale, 1);
});

test('a change made while the broker was away is not undone by what the broker retained from before', async (t) => {
  const broker = await startBroker(t);
  const ext = await Subscriber.connect(t, broker);
  await ext.subscribe('sp/sensor/g/o/status', 1);
  const c = await controllerWith(t, { m1: mqttNotifier(broker, { qos: 1, events: stateOfG }) });
  await c.ok('create', { i: 'sensor:g/o' });
  await c.ok('set_prop', { i: 'sensor:g/o', p: 'mqtt_update', v: 'm1' });
  await c.ok('update', { i: 'sensor:g/o', s: 1 });
  await ext.waitFor((m) => m.some((x) => x.payload === '1'), 15_000, 'status 1 retained by the broker');
  await broker.stop();
  // made here while the broker is away: its publication waits for the broker (QoS 1)
  await c.ok('update', { i: 'sensor:g/o', s: 2 });
  await broker.start();
  // on reconnect the broker hands over its retained 1 for the subscription, then takes our 2
  await ext.waitFor((m) => m.some((x) => x.payload === '2'), 60_000, 'status 2 published after the outage');
  await marker(c, ext, 'after');
  // (aedes may take our 2 before it answers the subscription: then 2 is what it retained, and nothing is stale)
  t.is((await c.ok('state', { i: 'sensor:g/o' })).status, 2);
});
