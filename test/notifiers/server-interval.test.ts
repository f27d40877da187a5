import test from 'ava';
import { Keys, startController } from '../helpers/controller';
import { Receiver, subjectOf } from '../helpers/receiver';
import { notifierFiles, stats, subscribeAll } from '../helpers/notifiers';
import { until } from '../helpers/wait';

const k = Keys.master;

test('server subject: restart on notify_restart (master only) and when the controller stops; others get none', async (t) => {
  const rcv = await Receiver.start(t);
  const other = await Receiver.start(t);
  const c = await startController(t, {
    files: notifierFiles({
      // as 3.3 wrote a subscription to server: the subject alone
      srv: { type: 'http-json', uri: rcv.uri, skip_test: true, space: 'sp', events: [{ subject: 'server' }, ...subscribeAll] },
      nosrv: { type: 'json', uri: other.uri, skip_test: true, events: subscribeAll },
    }),
  });
  t.deepEqual((await c.client.ok('get_notifier', { k, i: 'srv' })).events[0], { subject: 'server' });
  const refused = await c.client.rpc('notify_restart', { k: Keys.ops });
  t.truthy(refused.error, 'a key without master rights may not');
  t.deepEqual(await c.client.ok('notify_restart', { k }), { ok: true });
  const [r] = await rcv.waitFor(1);
  t.deepEqual(r.json, { subject: 'server', space: 'sp', data: ['restart'] });
  await c.stop();
  const reqs = await rcv.waitFor(2);
  t.deepEqual(reqs[1].json, { subject: 'server', space: 'sp', data: ['restart'] }, 'the stop sends restart and delivers it');
  t.false(other.requests.some((x) => subjectOf(x) === 'server'));
});

test('interval: every subscribed state sent again each interval, changed or not; others not', async (t) => {
  const rcv = await Receiver.start(t);
  const plain = await Receiver.start(t);
  const c = await startController(t, {
    files: notifierFiles({
      every: { type: 'json', uri: rcv.uri, skip_test: true, interval: 0.3, events: [{ subject: 'state', types: ['sensor'], groups: ['g'] }] },
      never: { type: 'json', uri: plain.uri, skip_test: true, events: [{ subject: 'state', types: ['#'], groups: ['#'] }] },
    }),
  });
  await c.client.ok('create', { k, i: 'sensor:g/s1' });
  await c.client.ok('create', { k, i: 'sensor:other/s2' });
  await c.client.ok('update', { k, i: 'sensor:g/s1', s: 1, v: '7' });
  const states = () => rcv.requests.flatMap((r) => r.json.data).filter((e: any) => e.oid === 'sensor:g/s1' && e.value === '7');
  await until('three rounds with the unchanged state', async () => states().length >= 4, 15_000);
  t.false(rcv.requests.flatMap((r) => r.json.data).some((e: any) => e.oid === 'sensor:other/s2'), 'only subscribed items');
  t.true((await stats(c.client, k, 'every')).interval_rounds >= 3);
  const once = plain.requests.flatMap((r) => r.json.data).filter((e: any) => e.oid === 'sensor:g/s1' && e.value === '7');
  t.is(once.length, 1, 'a notifier without interval sends a state once');
});

test('interval: a round is skipped while the queue is half full', async (t) => {
  const rcv = await Receiver.start(t);
  rcv.hold();
  const c = await startController(t, {
    files: notifierFiles({
      every: { type: 'json', uri: rcv.uri, skip_test: true, interval: 0.2, queue_size: 4, max_batch: 1, events: [{ subject: 'state', types: ['#'], groups: ['#'] }] },
    }),
  });
  for (const i of [1, 2]) await c.client.ok('create', { k, i: `sensor:g/s${i}` });
  // one request in hand (held), then rounds of 2 until 2 wait: half the bound of 4
  await until('rounds skipped', async () => (await stats(c.client, k, 'every')).interval_skipped >= 3, 15_000);
  const s = await stats(c.client, k, 'every');
  t.true(s.queued <= 4);
  t.is(s.dropped, 0, 'nothing pushed out by the rounds');
  rcv.release();
});
