import test from 'ava';
import crypto from 'node:crypto';
import mqtt from 'mqtt';
import { startBroker } from '../helpers/broker';
import { controllerLog } from './helpers';
import { until } from '../helpers/wait';
import { controllerWith, mqttNotifier } from './mqtt-setup';

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
  t.log(`${found.length} lines for 300 frames in ${seconds.toFixed(1)} s:\n${found.join('\n')}`);
  t.true(found.every((l) => /WARNING/.test(l)));
  // one line per interval (1 s) and the first of each window, however many frames
  t.true(found.length <= 2 * Math.ceil(seconds) + 2, `${found.length} lines`);
  t.true(found.length < 30);
});
