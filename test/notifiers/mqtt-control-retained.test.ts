import test from 'ava';
import { startBroker, Subscriber } from '../helpers/broker';
import { startController } from '../helpers/controller';
import { controllerLog } from '../helpers/notifiers';
import { until } from '../helpers/wait';
import { controllerWith, mqttNotifier } from '../helpers/mqtt-notifier';

/**
 * A unit control message the broker retained is a command, not a state: the
 * broker hands it over again at every subscription, so taken as it comes it
 * would run the unit's action again at every start of the controller. Taken
 * live (the broker forwarding it as published, retain flag cleared) it runs.
 */

const CONTROL = 'sp/unit/g/u/control';
// the notifier publishes states of group g only: the marker sensors keep what the test's client retained
const stateOfG = [{ subject: 'state', types: ['#'], groups: ['g'] }];

type Ctl = Awaited<ReturnType<typeof controllerWith>>;

/**
 * A sensor bound after the unit, whose topic holds a retained status 5: once it has taken it, the broker
 * has handed over what it retained for the unit's earlier subscription (it answers one connection's
 * subscriptions in order).
 */
async function marker(c: Ctl, ext: Subscriber, name: string): Promise<void> {
  await ext.publish(`sp/sensor/mk/${name}/status`, '5', 1, true);
  await c.ok('create', { i: `sensor:mk/${name}` });
  await c.ok('set_prop', { i: `sensor:mk/${name}`, p: 'mqtt_update', v: 'm1' });
  await until(`marker ${name}`, async () => (await c.ok('state', { i: `sensor:mk/${name}` })).status === 5, 15_000);
}

const statusOf = async (c: Ctl) => (await c.ok('state', { i: 'unit:g/u' })).status;
/** the new status of every action of the unit this controller ran, oldest first */
const actionsOf = async (c: Ctl) => ((await c.ok('result', { i: 'unit:g/u' })) as { nstatus: number; time: { created: number } }[])
  .sort((a, b) => a.time.created - b.time.created).map((r) => r.nstatus);

test('a retained control message runs the action once, live, and not again when the controller starts again', async (t) => {
  const broker = await startBroker(t);
  const ext = await Subscriber.connect(t, broker);
  const notifier = { m1: mqttNotifier(broker, { events: stateOfG }) };
  const first = await controllerWith(t, notifier);
  await first.ok('create', { i: 'unit:g/u' });
  await first.ok('set_prop', { i: 'unit:g/u', p: 'mqtt_control', v: 'm1' });
  await marker(first, ext, 'a');
  // published with retain while the controller listens: the broker forwards it live, the action runs
  await ext.publish(CONTROL, '1', 1, true);
  await until('the retained-published control ran', async () => (await statusOf(first)) === 1, 15_000);
  await ext.publish(CONTROL, '0 none');
  await until('a plain control ran', async () => (await statusOf(first)) === 0, 15_000);
  t.deepEqual(await actionsOf(first), [1, 0]);
  t.is((await first.ok('get_notifier', { i: 'm1' })).stats.controls_retained, 0);
  await first.stop();

  // the broker still holds "1" for the control topic and hands it over at the new subscription
  const again = await startController(t, { dir: first.dir });
  const second: Ctl = { ...again, k: first.k, ok: (m, p = {}) => again.client.ok(m, { k: first.k, ...p }) };
  t.is(await statusOf(second), 0);
  await marker(second, ext, 'b');
  // a live control after it: by the time it ran, an action queued before it would have run too
  await ext.publish(CONTROL, '2');
  await until('a live control after the start', async () => (await statusOf(second)) === 2, 15_000);
  t.deepEqual(await actionsOf(second), [2], 'the retained control did not run again');
  t.is((await second.ok('get_notifier', { i: 'm1' })).stats.controls_retained, 1);
  const said = controllerLog(first.dir).split('\n').filter((l) => l.includes('ignored: the broker retained it'));
  t.is(said.length, 1);
  t.regex(said[0], /m1: control message "1" on sp\/unit\/g\/u\/control ignored/);
  // cleared as the log says (an empty retained message): nothing to run, nothing refused
  await ext.publish(CONTROL, '', 1, true);
  await ext.publish(CONTROL, '3');
  await until('a live control after the clearing', async () => (await statusOf(second)) === 3, 15_000);
  t.deepEqual(await actionsOf(second), [2, 3]);
  t.false(/dropped/.test(controllerLog(first.dir)), 'the empty message is not refused');
});
