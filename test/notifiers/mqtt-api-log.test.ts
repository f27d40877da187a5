import test from 'ava';
import crypto from 'node:crypto';
import mqtt from 'mqtt';
import { startBroker } from '../helpers/broker';
import { controllerLog } from '../helpers/notifiers';
import { until } from '../helpers/wait';
import { controllerWith, mqttNotifier } from '../helpers/mqtt-notifier';

const REQUEST = 'sp/controller/uc/testhost/api/request';

test('300 undecryptable MQTT API frames: a bounded number of log lines, with the count', async (t) => {
  const broker = await startBroker(t);
  const client = await mqtt.connectAsync({ host: broker.host, port: broker.port, protocolVersion: 4, reconnectPeriod: 0 });
  t.teardown(() => client.endAsync(true));
  const c = await controllerWith(t, { m1: mqttNotifier(broker, { api_enabled: true, events: [] }) }, { ini: { server: { log_repeat_interval: 1 } } });
  await until('connected', async () => (await c.ok('get_notifier', { i: 'm1' })).stats.connected, 10_000);
  const started = performance.now();
  // a binary frame naming a real key, sealed with nothing that key opens
  const frame = () => Buffer.concat([Buffer.from([0, 2]), Buffer.from('masterkey'), Buffer.from([0]), crypto.randomBytes(80)]);
  for (let i = 0; i < 300; i++) await client.publishAsync(REQUEST, frame(), { qos: 1 });
  await until('300 frames counted', async () => (await c.ok('get_notifier', { i: 'm1' })).stats.api.bad_frames === 300, 20_000);
  const lines = () => controllerLog(c.dir).split('\n').filter((l) => l.includes('API requests dropped: an encrypted frame that does not authenticate'));
  // every frame is in the log's count: the first one by itself, the others in the lines of each interval
  const total = (ls: string[]) => ls.reduce((n, l) => n + (/; more are counted/.test(l) ? 1 : Number(/: (\d+) more in the last 1 s/.exec(l)?.[1] ?? 0)), 0);
  await until('all 300 in the log\'s count', () => total(lines()) === 300, 20_000);
  const seconds = (performance.now() - started) / 1000;
  const found = lines();
  // the count only: the lines themselves are warnings this test expects, and in the output they would read as trouble
  t.log(`${found.length} expected log lines (the first, then one per 1 s) for 300 frames in ${seconds.toFixed(1)} s`);
  t.true(found.every((l) => /WARNING/.test(l)));
  // one line per interval (1 s) and the first of each window, however many frames
  t.true(found.length <= 2 * Math.ceil(seconds) + 2, `${found.length} lines`);
  t.true(found.length < 30);
});

test('300 malformed control messages and 300 bad states from the broker: a bounded number of log lines, with the count', async (t) => {
  const broker = await startBroker(t);
  const client = await mqtt.connectAsync({ host: broker.host, port: broker.port, protocolVersion: 4, reconnectPeriod: 0 });
  t.teardown(() => client.endAsync(true));
  const c = await controllerWith(t, { m1: mqttNotifier(broker, { events: [] }) }, { ini: { server: { log_repeat_interval: 1 } } });
  await c.ok('create', { i: 'unit:g/u' });
  await c.ok('set_prop', { i: 'unit:g/u', p: 'mqtt_control', v: 'm1' });
  await c.ok('create', { i: 'sensor:g/s' });
  await c.ok('set_prop', { i: 'sensor:g/s', p: 'mqtt_update', v: 'm1' });
  await until('connected', async () => (await c.ok('get_notifier', { i: 'm1' })).stats.connected, 10_000);
  const started = performance.now();
  // each text different: the kind is the reason without what it quotes
  for (let i = 0; i < 300; i++) {
    await client.publishAsync('sp/unit/g/u/control', `on${i}`, { qos: 1 });
    await client.publishAsync('sp/sensor/g/s/status', `high${i}`, { qos: 1 });
  }
  await client.publishAsync('sp/unit/g/u/control', '1 done', { qos: 1 });
  await until('the last control applied', async () => (await c.ok('state', { i: 'unit:g/u' })).value === 'done', 20_000);
  const of = (what: string) => controllerLog(c.dir).split('\n').filter((l) => l.includes(what));
  const total = (ls: string[]) => ls.reduce((n, l) => n + (/; more are counted/.test(l) ? 1 : Number(/: (\d+) more in the last 1 s/.exec(l)?.[1] ?? 0)), 0);
  await until('all in the log\'s counts', () => total(of('control messages dropped')) + total(of('control message "on')) === 300
    && total(of('updates dropped (a status that is not an integer)')) + total(of('dropped: status "high')) === 300, 20_000);
  const seconds = (performance.now() - started) / 1000;
  const lines = controllerLog(c.dir).split('\n').filter((l) => /control message|control messages dropped|status "high|status that is not an integer/.test(l));
  t.log(`${lines.length} lines for 600 messages in ${seconds.toFixed(1)} s`);
  // the first of each kind in full (what was sent, where), then one line per interval
  t.regex(lines[0], /control message "on0" on sp\/unit\/g\/u\/control dropped: status "on0" is not an integer|update of sensor:g\/s dropped: status "high0"/);
  t.true(lines.length <= 2 * (2 * Math.ceil(seconds) + 2), `${lines.length} lines`);
  t.true(lines.length < 40);
});
