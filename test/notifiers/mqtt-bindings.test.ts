import test from 'ava';
import { startBroker, Subscriber } from '../helpers/broker';
import { controllerLog } from '../helpers/notifiers';
import { until } from '../helpers/wait';
import { controllerWith, mqttNotifier, sendUntilTaken } from '../helpers/mqtt-notifier';

test('mqtt_control and mqtt_update take <id>, <id>:<qos> and <id>;<qos> through set_prop and from the items file', async (t) => {
  const broker = await startBroker(t);
  const ext = await Subscriber.connect(t, broker);
  const stored = (oid: string, binding: Record<string, string>) => [oid, { status: 0, value: null, t: 1, ...binding }];
  const items = Object.fromEntries([
    stored('unit:f/semi', { mqtt_control: 'm1;2' }),
    stored('sensor:f/colon', { mqtt_update: 'm1:0' }),
  ]);
  const c = await controllerWith(t, { m1: mqttNotifier(broker) }, {
    files: { 'runtime/uc_items.json': JSON.stringify({ version: 1, items }) },
  });
  const state = async (oid: string) => c.ok('state', { i: oid });
  for (const [oid, p, v] of [['unit:g/a', 'mqtt_control', 'm1'], ['unit:g/b', 'mqtt_control', 'm1:0'], ['unit:g/c', 'mqtt_control', 'm1;2'],
    ['sensor:g/s', 'mqtt_update', 'm1;1']]) {
    await c.ok('create', { i: oid });
    await c.ok('set_prop', { i: oid, p, v });
  }
  t.is((await state('unit:g/c')).mqtt_control, 'm1;2');
  await until('connected', async () => (await c.ok('get_notifier', { i: 'm1' })).stats.connected, 10_000);
  let n = 0;
  for (const oid of ['unit:g/a', 'unit:g/b', 'unit:g/c', 'unit:f/semi']) {
    const status = ++n;
    await sendUntilTaken(ext, `control of ${oid}`, `sp/unit/${oid.slice(5)}/control`, String(status), async () => (await state(oid)).status === status);
  }
  for (const oid of ['sensor:g/s', 'sensor:f/colon']) {
    await sendUntilTaken(ext, `update of ${oid}`, `sp/sensor/${oid.slice(7)}/status`, '5', async () => (await state(oid)).status === 5);
  }
  // malformed or unknown bindings are refused with the form expected
  for (const v of ['m1;3', 'm1:1:1', 'm1;', 'nope;1']) {
    const r = await c.client.rpc('set_prop', { k: c.k, i: 'unit:g/a', p: 'mqtt_control', v });
    t.is(r.error?.code, 11, v);
  }
  t.false(/malformed, skipped/.test(controllerLog(c.dir)));
});

test('unit control messages in 3.3 JSON form as well as the text form', async (t) => {
  const broker = await startBroker(t);
  const ext = await Subscriber.connect(t, broker);
  const c = await controllerWith(t, { m1: mqttNotifier(broker) });
  await c.ok('create', { i: 'unit:g/u' });
  await c.ok('set_prop', { i: 'unit:g/u', p: 'mqtt_control', v: 'm1' });
  await until('connected', async () => (await c.ok('get_notifier', { i: 'm1' })).stats.connected, 10_000);
  const state = async () => c.ok('state', { i: 'unit:g/u' });
  const control = async (body: unknown, status: number, value: string | null) => {
    await sendUntilTaken(ext, JSON.stringify(body), 'sp/unit/g/u/control', typeof body === 'string' ? body : JSON.stringify(body),
      async () => { const s = await state(); return s.status === status && s.value === value; });
  };
  await control({ status: 1, value: 'on', priority: 50 }, 1, 'on');
  await control({ status: '2', value: 42 }, 2, '42');
  // no value: the value stays as it was (as the text form's `none`)
  await control({ status: 3 }, 3, '42');
  await control({ status: 4, value: null }, 4, '42');
  await control('5 None', 5, '42');
  await control('6 seven 10', 6, 'seven');
  for (const bad of ['{"status": "x"}', '{"value": 1}', '{"status": 1, "value": {}}', '{"status": 1, "priority": -1}', '{"status": 1, "extra": 1}', '{bad', '[1]']) {
    await ext.publish('sp/unit/g/u/control', bad);
  }
  await control({ status: 7 }, 7, 'seven');
  const log = controllerLog(c.dir);
  t.regex(log, /control message "\{\\"status\\": \\"x\\"}" on sp\/unit\/g\/u\/control dropped: status "x" is not an integer/);
  t.regex(log, /dropped: no status/);
  t.regex(log, /dropped: value is not a string or number/);
  t.regex(log, /dropped: priority "-1" is not a whole number/);
  t.regex(log, /dropped: unknown field extra/);
  t.regex(log, /dropped: not valid JSON/);
});
