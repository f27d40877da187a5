import test from 'ava';
import { startBroker, Subscriber, type Broker } from '../helpers/broker';
import { stats } from '../helpers/notifiers';
import { until } from '../helpers/wait';
import { controllerWith, mqttNotifier } from '../helpers/mqtt-notifier';

const VALUE = 'sp/lvar/g/v/value';
const stateOnly = [{ subject: 'state', types: ['#'], groups: ['#'] }];


const valuesOf = (sub: Subscriber, topic: string) => new Set(sub.on(topic).map((m) => m.payload));

test('a broker restart in the middle of a stream of state events loses nothing; the API answers throughout', async (t) => {
  const broker = await startBroker(t);
  const sub = await Subscriber.lasting(t, broker, VALUE);
  const c = await controllerWith(t, { m1: mqttNotifier(broker, { qos: 1, events: stateOnly }) });
  await c.ok('create', { i: 'lvar:g/v' });
  await c.ok('create', { i: 'lvar:g/in' });
  await c.ok('set_prop', { i: 'lvar:g/in', p: 'mqtt_update', v: 'm1' });
  const total = 300;
  for (let i = 1; i <= total; i++) {
    if (i === 101) await broker.stop();
    if (i === 201) await broker.start();
    // the API keeps answering while the broker is away (c.ok throws on any error)
    await c.ok('update', { i: 'lvar:g/v', v: String(i) });
    if (i === 150) {
      t.true((await c.ok('test')).ok);
      const s = await stats(c.client, c.k, 'm1');
      t.false(s.connected);
      t.true(s.queued > 0, 'events wait for the broker');
    }
  }
  await sub.waitFor(() => valuesOf(sub, VALUE).size >= total + 1, 60_000, 'every value');
  const got = valuesOf(sub, VALUE);
  for (let i = 1; i <= total; i++) t.true(got.has(String(i)), `value ${i} arrived`);
  const s = await stats(c.client, c.k, 'm1');
  t.is(s.dropped, 0);
  t.true(s.connected);
  t.true(s.connects >= 2, 'it reconnected');
  // the subscriptions came back with the connection
  const ext = await Subscriber.connect(t, broker);
  await ext.publish('sp/lvar/g/in/value', 'after the restart');
  await until('an update after the restart', async () => (await c.ok('state', { i: 'lvar:g/in' })).value === 'after the restart', 10_000);
});

test('past the buffer bound the oldest waiting events are dropped and counted; QoS 0 events are not buffered', async (t) => {
  const broker = await startBroker(t);
  const sub = await Subscriber.lasting(t, broker, '+/lvar/g/v/value');
  const c = await controllerWith(t, {
    m1: mqttNotifier(broker, { qos: 1, events: stateOnly, queue_size: 20 }),
    q0: mqttNotifier(broker, { space: 'q0', qos: 0, events: stateOnly }),
  });
  await c.ok('create', { i: 'lvar:g/v' });
  for (let i = 1; i <= 10; i++) await c.ok('update', { i: 'lvar:g/v', v: String(i) });
  await sub.waitFor(() => valuesOf(sub, VALUE).has('10') && valuesOf(sub, 'q0/lvar/g/v/value').has('10'), 10_000, 'values before the outage');
  await broker.stop();
  for (let i = 11; i <= 70; i++) await c.ok('update', { i: 'lvar:g/v', v: String(i) });
  await broker.start();
  await sub.waitFor(() => valuesOf(sub, VALUE).has('70'), 60_000, 'the newest value after the outage');
  const s = await stats(c.client, c.k, 'm1');
  const during = [...valuesOf(sub, VALUE)].filter((v) => Number(v) >= 11).length;
  t.true(s.dropped > 0, 'the bound was reached');
  // the queue's bound, the batch in hand, and the one before it, whose acknowledgements the batch in hand waits for (the window of two)
  t.true(during <= 20 + 2, `at most the bound and the two batches in flight got through (${during})`);
  t.is(during + s.dropped, 60, 'every event of the outage was either delivered or counted as dropped');
  const q0 = await stats(c.client, c.k, 'q0');
  t.true(q0.dropped_offline > 0, 'QoS 0 events met the broker away and were counted');
  t.is(q0.dropped, 0);
  // not buffered, but the retained state caught up: a later subscriber learns the newest value
  const late = await Subscriber.connect(t, broker);
  await late.subscribe('q0/lvar/g/v/value', 0);
  await late.waitFor((m) => m.some((x) => x.payload === '70' && x.retain), 10_000, 'the newest retained value');
});

test('while the broker is away, reconnect attempts back off', async (t) => {
  const broker = await startBroker(t);
  const c = await controllerWith(t, { m1: mqttNotifier(broker, { events: stateOnly }) });
  const before = await until('connected', async () => {
    const s = await stats(c.client, c.k, 'm1');
    return s.connected && s;
  }, 10_000) as Record<string, any>;
  await broker.stop();
  await new Promise((r) => setTimeout(r, 3200));
  const tries = (await stats(c.client, c.k, 'm1')).connect_attempts - before.connect_attempts;
  // waits of 0.5, 1, 2 s: two tries within 3.2 s (a slow machine makes fewer); a fixed 0.5 s period would make six
  t.true(tries >= 1 && tries <= 3, `${tries} attempts`);
  await broker.start();
  await until('connected again', async () => (await stats(c.client, c.k, 'm1')).connected, 20_000);
});

test('a batch waits for the broker beyond the notifier timeout and the retries: the outage is not a delivery failure', async (t) => {
  const broker = await startBroker(t);
  const sub = await Subscriber.lasting(t, broker, VALUE);
  // a short timeout and no retries: a send cut by the timeout while the broker is away would drop its batch
  const c = await controllerWith(t, { m1: mqttNotifier(broker, { qos: 1, events: stateOnly, timeout: 0.5, retries: 0 }) });
  await c.ok('create', { i: 'lvar:g/v' });
  await sub.waitFor(() => valuesOf(sub, VALUE).size >= 1, 10_000, 'the first value');
  await broker.stop();
  for (let i = 1; i <= 5; i++) await c.ok('update', { i: 'lvar:g/v', v: String(i) });
  // several timeouts long, while the updates wait
  await new Promise((r) => setTimeout(r, 3000));
  t.like(await stats(c.client, c.k, 'm1'), { connected: false, failed: 0, dropped: 0 });
  await broker.start();
  await sub.waitFor(() => valuesOf(sub, VALUE).has('5'), 30_000, 'the values of the outage');
  for (let i = 1; i <= 5; i++) t.true(valuesOf(sub, VALUE).has(String(i)), `value ${i} arrived`);
  t.like(await stats(c.client, c.k, 'm1'), { failed: 0, dropped: 0 });
});
