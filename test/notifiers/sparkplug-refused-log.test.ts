import 'reflect-metadata';
import test from 'ava';
import { startBroker } from '../helpers/broker';
import { controllerWith } from '../helpers/mqtt-notifier';
import { controllerLog, stats } from '../helpers/notifiers';
import { SparkplugHost, Types } from '../helpers/sparkplug-host';
import { loggedCount, NODE, sparkplugNotifier } from '../helpers/sparkplug-node';
import { until } from '../helpers/wait';

test('1 000 refused commands: counted, and a bounded number of log lines whose counts add up to them', async (t) => {
  const broker = await startBroker(t, { kind: 'mosquitto' });
  const host = await SparkplugHost.connect(t, broker, 'plant');
  const c = await controllerWith(t, { sp: sparkplugNotifier(broker) }, { ini: { server: { log_repeat_interval: 1 } } });
  await c.ok('create', { i: 'sensor:g1/temp' });
  await host.until('born', () => host.value(NODE, 'g1', 'sensor/temp/status') !== undefined);
  const started = performance.now();
  // each a different metric: the kind is the reason, not what the command names
  const N = 1000;
  for (let i = 0; i < N; i++) await host.command(NODE, 'g1', [{ name: `sensor/nothing${i}/status`, datatype: Types.Int32, value: 1 }]);
  await until(`${N} refused`, async () => (await stats(c.client, c.k, 'sp')).commands_refused === N, 60_000);
  const lines = () => controllerLog(c.dir).split('\n').filter((l) => /sparkplug edge1: commands? refused/.test(l));
  await until(`all ${N} in the log's count`, () => loggedCount(lines()) === N, 30_000);
  const seconds = (performance.now() - started) / 1000;
  const found = lines();
  t.log(`${found.length} lines for ${N} refused commands in ${seconds.toFixed(1)} s:\n${found.join('\n')}`);
  // the first in full (what it named, where from), then one line per interval (1 s)
  t.regex(found[0], /WARNING .*sparkplug edge1: command refused: no such metric: "sensor\/nothing0\/status" on g1 \(from spBv1\.0\/plant\/DCMD\/edge1\/g1\); more are counted/);
  t.true(found.length <= 2 * Math.ceil(seconds) + 2, `${found.length} lines`);
  t.true(found.length < 100);
  t.is((await stats(c.client, c.k, 'sp')).commands_run, 0);
});
