import test from 'ava';
import { startBroker, Subscriber } from '../helpers/broker';
import { controllerWith, everything, mqttNotifier } from '../helpers/mqtt-notifier';
import { until } from '../helpers/wait';

test('server subject: restart as 3.3\'s {e, t, c} on SPACE/controller/<product>/<system>/events, not retained', async (t) => {
  const broker = await startBroker(t);
  const sub = await Subscriber.connect(t, broker);
  await sub.subscribe('sp/controller/#', 2);
  const c = await controllerWith(t, { m1: mqttNotifier(broker, { events: [{ subject: 'server' }], qos: { system: 2 } }) });
  await c.ok('notify_restart');
  const got = await sub.waitFor((m) => m.some((x) => x.topic === 'sp/controller/uc/testhost/events'), 10_000, 'the server event');
  const m = got.find((x) => x.topic === 'sp/controller/uc/testhost/events')!;
  const ev = JSON.parse(m.payload);
  t.is(ev.e, 'restart');
  t.is(ev.c, 'uc/testhost');
  t.true(typeof ev.t === 'number' && Math.abs(ev.t - Date.now() / 1000) < 60);
  t.false(m.retain);
  t.is(m.qos, 2, 'the system QoS');
  await c.stop();
  await sub.waitFor((x) => x.filter((y) => y.topic === 'sp/controller/uc/testhost/events').length >= 2, 10_000, 'restart at stop');
});

test('retain_enabled false: states not retained; timestamp_enabled false: t null in log records and server events', async (t) => {
  const broker = await startBroker(t);
  const sub = await Subscriber.connect(t, broker);
  await sub.subscribe(['sp/#', 'on/#']);
  const c = await controllerWith(t, {
    off: mqttNotifier(broker, { retain_enabled: false, timestamp_enabled: false, events: [...everything, { subject: 'server' }] }),
    on: mqttNotifier(broker, { space: 'on', events: everything }),
  });
  await c.ok('create', { i: 'sensor:g/s' });
  await c.ok('update', { i: 'sensor:g/s', s: 1, v: '3' });
  await c.ok('log_warning', { m: 'stamp check' });
  await c.ok('notify_restart');
  await sub.waitFor((m) => m.some((x) => x.topic === 'sp/sensor/g/s/value' && x.payload === '3') && m.some((x) => x.topic === 'on/sensor/g/s/value' && x.payload === '3') &&
    m.some((x) => x.topic === 'sp/log' && x.payload.includes('stamp check')) && m.some((x) => x.topic === 'on/log' && x.payload.includes('stamp check')) &&
    m.some((x) => x.topic.endsWith('/events')), 10_000, 'everything');
  const late = await Subscriber.connect(t, broker);
  await late.subscribe(['sp/sensor/#', 'on/sensor/#']);
  await late.waitFor((m) => m.filter((x) => x.topic.startsWith('on/')).length >= 2, 10_000, 'the retained states of "on"');
  t.false(late.messages.some((x) => x.topic.startsWith('sp/')), 'retain_enabled false: nothing retained');
  const log = (space: string) => JSON.parse(sub.messages.find((x) => x.topic === `${space}/log` && x.payload.includes('stamp check'))!.payload);
  t.is(log('sp').t, null);
  t.is(typeof log('on').t, 'number');
  t.is(JSON.parse(sub.on('sp/controller/uc/testhost/events')[0].payload).t, null);
});

test('subscribe_all: one subscription to SPACE/unit/# and SPACE/sensor/# brings updates and control; topics of no item arrive too', async (t) => {
  const broker = await startBroker(t);
  const ext = await Subscriber.connect(t, broker);
  const c = await controllerWith(t, {
    all: mqttNotifier(broker, { subscribe_all: true, events: [] }),
    each: mqttNotifier(broker, { events: [] }),
  });
  await c.ok('create', { i: 'sensor:g/s' });
  await c.ok('create', { i: 'unit:g/u' });
  await c.ok('set_prop', { i: 'sensor:g/s', p: 'mqtt_update', v: 'all' });
  await c.ok('set_prop', { i: 'unit:g/u', p: 'mqtt_control', v: 'all' });
  const inOf = async (id: string) => (await c.ok('get_notifier', { i: id })).stats.messages_in as number;
  // the wildcard subscription is in place once a message of no item arrives
  await until('all subscribed', async () => {
    await ext.publish('sp/sensor/nobody/x/status', '1');
    return (await inOf('all')) > 0;
  }, 10_000);
  await ext.publish('sp/sensor/g/s/value', '9');
  await until('update', async () => (await c.ok('state', { i: 'sensor:g/s' })).value === '9', 10_000);
  await ext.publish('sp/unit/g/u/control', '1');
  await until('control', async () => (await c.ok('state', { i: 'unit:g/u' })).status === 1, 10_000);
  t.is(await inOf('each'), 0, 'without subscribe_all only the bound topics are subscribed');
});

test('a state as 3.3 publishes it: one JSON object {t, c, status, value, ...} on SPACE/type/group/id, retained, before the subtopics', async (t) => {
  const broker = await startBroker(t);
  const sub = await Subscriber.connect(t, broker);
  await sub.subscribe(['sp/#', 'js/#', 'st/#', 'nt/#']);
  const c = await controllerWith(t, {
    m1: mqttNotifier(broker),
    js: mqttNotifier(broker, { space: 'js', state_topics: 'json' }),
    st: mqttNotifier(broker, { space: 'st', state_topics: 'subtopics' }),
    nt: mqttNotifier(broker, { space: 'nt', state_topics: 'json', timestamp_enabled: false }),
  });
  await c.ok('create', { i: 'sensor:g/s' });
  await c.ok('update', { i: 'sensor:g/s', s: 1, v: '42' });
  await c.ok('create', { i: 'unit:g/u' });
  const done = (space: string) => (m: { topic: string; payload: string }[]) =>
    m.some((x) => x.topic === `${space}/sensor/g/s${space === 'st' ? '/value' : ''}` && x.payload.includes('42')) && m.some((x) => x.topic.startsWith(`${space}/unit/g/u`));
  await sub.waitFor((m) => ['sp', 'js', 'st', 'nt'].every((sp) => done(sp)(m)), 10_000, 'the states of every notifier');
  const { t: at } = await c.ok('state', { i: 'sensor:g/s' });
  const last = (topic: string) => JSON.parse(sub.on(topic).at(-1)!.payload);
  t.deepEqual(last('sp/sensor/g/s'), { t: at, c: 'uc/testhost', status: 1, value: '42' });
  t.like(last('sp/unit/g/u'), { c: 'uc/testhost', status: 0, value: null, nstatus: 0, nvalue: null, action_enabled: true });
  // both by default: the JSON first, then the subtopics of the same state
  const order = sub.messages.filter((x) => x.topic.startsWith('sp/sensor/g/s')).map((x) => x.topic);
  t.deepEqual(order.slice(-3), ['sp/sensor/g/s', 'sp/sensor/g/s/status', 'sp/sensor/g/s/value']);
  // json only, subtopics only
  t.false(sub.messages.some((x) => x.topic.startsWith('js/sensor/g/s/') || x.topic.startsWith('nt/sensor/g/s/')));
  t.false(sub.messages.some((x) => x.topic === 'st/sensor/g/s' || x.topic === 'st/unit/g/u'));
  t.is(sub.on('st/sensor/g/s/value').at(-1)?.payload, '42');
  t.like(last('js/sensor/g/s'), { t: at, status: 1, value: '42' });
  t.is(last('nt/sensor/g/s').t, null, 'timestamp_enabled false: t null');
  // retained: a later subscriber of the item topic gets the state at once
  const late = await Subscriber.connect(t, broker);
  await late.subscribe('sp/sensor/g/s');
  const got = await late.waitFor((m) => m.length >= 1, 10_000, 'the retained JSON state');
  t.true(got[0].retain);
  t.like(JSON.parse(got[0].payload), { status: 1, value: '42' });
});

test('state_topics other than both, json or subtopics is refused with the reason', async (t) => {
  const broker = await startBroker(t);
  const c = await controllerWith(t, { bad: mqttNotifier(broker, { state_topics: 'xml' }) });
  t.regex((await c.ok('get_notifier', { i: 'bad' })).problem, /state_topics must be one of both, json, subtopics/);
});

test('a 3.3-shaped JSON state from another controller reaches an item bound with mqtt_update', async (t) => {
  const broker = await startBroker(t);
  const a = await controllerWith(t, { m1: mqttNotifier(broker, { state_topics: 'json' }) });
  const b = await controllerWith(t, { m1: mqttNotifier(broker, { events: [] }) });
  await b.ok('create', { i: 'sensor:g/shared' });
  await b.ok('set_prop', { i: 'sensor:g/shared', p: 'mqtt_update', v: 'm1' });
  await a.ok('create', { i: 'sensor:g/shared' });
  await a.ok('update', { i: 'sensor:g/shared', s: 1, v: 'from a' });
  await until('b takes the state', async () => {
    const s = await b.ok('state', { i: 'sensor:g/shared' });
    return s.status === 1 && s.value === 'from a';
  }, 15_000);
  t.pass();
});
