import test from 'ava';
import { startBroker, Subscriber, type Broker } from '../helpers/broker';
import { startGatedBroker } from '../helpers/gated-broker';
import { Keys, makeDir, spawnController, type Child } from '../helpers/controller';
import { notifierFiles, stats } from '../helpers/notifiers';
import { until } from '../helpers/wait';
import { mqttNotifier } from '../helpers/mqtt-notifier';

const k = Keys.master;
const VALUE = 'sp/lvar/g/v/value';
const stateOnly = [{ subject: 'state', types: ['#'], groups: ['#'] }];


const outboxOf = async (c: Child) => (await stats(c.client, k, 'm1')).outbox as Record<string, number>;

/** The values 1..n a subscriber got on VALUE, and how many messages came twice (QoS 1 allows it). */
function received(sub: Subscriber, n: number) {
  const all = sub.on(VALUE).map((m) => m.payload).filter((v) => Number(v) >= 1 && Number(v) <= n);
  const distinct = new Set(all);
  return { distinct, duplicates: all.length - distinct.size };
}

test('durable: broker down, 500 updates, SIGKILL, restart, broker back: all 500 arrive (QoS 1)', async (t) => {
  t.timeout(300_000);
  const broker = await startBroker(t);
  const sub = await Subscriber.lasting(t, broker, VALUE);
  const dir = makeDir(t, { files: notifierFiles({ m1: mqttNotifier(broker, { qos: 1, events: stateOnly, durable: true, skip_test: true }) }) });
  const first = await spawnController(t, dir);
  await first.client.ok('create', { k, i: 'lvar:g/v', save: true });
  await sub.waitFor(() => sub.on(VALUE).length > 0, 30_000, 'the state of the new item');
  await broker.stop();
  const n = 500;
  for (let i = 1; i <= n; i++) await first.client.ok('update', { k, i: 'lvar:g/v', v: String(i) });
  await until('500 on disk', async () => (await outboxOf(first)).held === n, 60_000);
  first.proc.kill('SIGKILL');
  await first.exited;

  const second = await spawnController(t, dir);
  // still away: what the last run left waits in the outbox
  t.is((await outboxOf(second)).held, n);
  await broker.start();
  await sub.waitFor(() => received(sub, n).distinct.size === n, 120_000, 'every value of the outage');
  const { duplicates } = received(sub, n);
  t.log(`duplicates (QoS 1): ${duplicates}`);
  await until('outbox drained', async () => (await outboxOf(second)).held === 0, 60_000);
  const s = await stats(second.client, k, 'm1');
  t.is(s.dropped, 0);
});

test('durable: a batch published and not acknowledged when the controller is SIGKILLed comes again after the restart', async (t) => {
  t.timeout(300_000);
  const broker = await startGatedBroker(t);
  const sub = await Subscriber.lasting(t, broker, VALUE);
  const dir = makeDir(t, { files: notifierFiles({ m1: { ...mqttNotifier(broker, { qos: 1, events: stateOnly, durable: true, skip_test: true }), protocol: '3.1.1' } }, 'uc') });
  const first = await spawnController(t, dir);
  await first.client.ok('create', { k, i: 'lvar:g/v', save: true });
  await sub.waitFor(() => sub.on(VALUE).length > 0, 30_000, 'the state of the new item');
  // the controller's publications are taken off the socket and never acknowledged
  broker.close('uc-');
  const n = 50;
  for (let i = 1; i <= n; i++) await first.client.ok('update', { k, i: 'lvar:g/v', v: String(i) });
  await until('publications held at the broker', () => broker.held > 0, 30_000);
  await until('50 on disk', async () => (await outboxOf(first)).held === n, 60_000);
  first.proc.kill('SIGKILL');
  await first.exited;
  // what the broker held of the dead client goes nowhere (it never acknowledged it to the controller)
  broker.open();
  const second = await spawnController(t, dir);
  await sub.waitFor(() => received(sub, n).distinct.size === n, 120_000, 'every value');
  await until('outbox drained', async () => (await outboxOf(second)).held === 0, 60_000);
  t.log(`duplicates (QoS 1): ${received(sub, n).duplicates}`);
  t.pass();
});
