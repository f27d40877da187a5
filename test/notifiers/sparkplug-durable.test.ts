import test from 'ava';
import { startBroker } from '../helpers/broker';
import { Keys, makeDir, spawnController, type Child } from '../helpers/controller';
import { notifierFiles, stats } from '../helpers/notifiers';
import { SparkplugHost } from '../helpers/sparkplug-host';
import { NODE, sparkplugNotifier } from '../helpers/sparkplug-node';
import { until } from '../helpers/wait';

const k = Keys.master;
const outboxOf = async (c: Child) => (await stats(c.client, k, 'sp')).outbox as Record<string, number>;

test('durable: NDATA made while the broker is away survives a SIGKILL and goes out after the next NBIRTH, historical', async (t) => {
  t.timeout(300_000);
  const broker = await startBroker(t, { kind: 'mosquitto' });
  const host = await SparkplugHost.connect(t, broker, 'plant', 'scada');
  await host.state('scada', true);
  const dir = makeDir(t, {
    files: notifierFiles({ sp: sparkplugNotifier(broker, { primary_host_id: 'scada', devices: 'node', durable: true, skip_test: true, store_max: 1 }) }),
  });
  const first = await spawnController(t, dir);
  // born first: an item made while the node's first birth is under way may miss it and its rebirth (see the
  // sparkplug README), which this test is not about
  await host.until('born', () => host.messages.some((m) => m.kind === 'NBIRTH'), 30_000);
  await first.client.ok('create', { k, i: 'sensor:g1/temp', save: true });
  await first.client.ok('update', { k, i: 'sensor:g1/temp', s: 1, v: '0' });
  await host.until('born, then live data', () => host.value(NODE, '', 'sensor/g1/temp/value') === 0, 30_000);
  await broker.stop();
  const n = 300;
  for (let i = 1; i <= n; i++) await first.client.ok('update', { k, i: 'sensor:g1/temp', v: String(i) });
  await until('300 on disk', async () => (await outboxOf(first)).held === n, 60_000);
  first.proc.kill('SIGKILL');
  await first.exited;

  const second = await spawnController(t, dir);
  t.is((await outboxOf(second)).held, n, 'what the last run left waits in the outbox');
  await broker.start();
  const h2 = await SparkplugHost.connect(t, broker, 'plant', 'scada');
  await h2.state('scada', true);
  // the birth carries the newest state; every older one comes after it as historical NDATA
  await h2.until('born', () => h2.messages.some((m) => m.kind === 'NBIRTH'), 60_000);
  const births = h2.messages.filter((m) => m.kind === 'NBIRTH');
  const born = births[0].metrics.find((m) => m.name === 'sensor/g1/temp/value')!;
  t.is(born.value, n, 'the NBIRTH holds the state after the outage');
  const alias = born.alias;
  const historical = () => h2.messages.filter((m) => m.kind === 'NDATA').flatMap((m) => m.metrics.filter((x) => x.alias === alias));
  await h2.until('the outage as historical data', () => new Set(historical().map((m) => m.value)).size >= n - 1, 60_000);
  const values = new Set(historical().map((m) => m.value));
  for (let i = 1; i < n; i++) t.true(values.has(i), `value ${i} arrived`);
  // a failure shows the metrics sent live (with their timestamps), not only that there were some
  t.deepEqual(historical().filter((m) => !m.is_historical), [], 'flagged historical');
  const firstData = h2.messages.findIndex((m) => m.kind === 'NDATA');
  t.true(firstData > h2.messages.indexOf(births[0]), 'after the NBIRTH');
  await until('outbox drained', async () => (await outboxOf(second)).held === 0, 60_000);
  const s = await stats(second.client, k, 'sp');
  t.is(s.dropped, 0);
  t.is(s.store_dropped, 0, 'the in-memory store (store_max 1) is not used');
  t.deepEqual(h2.problems, []);
});
