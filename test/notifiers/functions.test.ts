import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { Keys, startController } from '../helpers/controller';
import { Receiver } from '../helpers/receiver';
import { notifierFiles, stateEvent, stats, subscribeAll } from '../helpers/notifiers';
import { until } from '../helpers/wait';

const k = Keys.master;

test('list_notifiers and get_notifier show the notifier objects; get_notifier adds the figures', async (t) => {
  const rcv = await Receiver.start(t);
  const { client } = await startController(t, {
    files: notifierFiles({
      a: { type: 'json', uri: rcv.uri, notify_key: 'nk', space: 'sp', timeout: 30, skip_test: true, events: subscribeAll },
      b: { type: 'http', uri: rcv.uri, enabled: false, stop_on_error: true, events: [{ subject: 'log', level: 40 }] },
    }),
  });
  const list = await client.ok('list_notifiers', { k });
  t.deepEqual(list, [
    { id: 'a', type: 'json', enabled: true, events: subscribeAll, space: 'sp', timeout: 30, skip_test: true, uri: rcv.uri, notify_key: 'nk' },
    { id: 'b', type: 'http', enabled: false, events: [{ subject: 'log', level: 40 }], uri: rcv.uri, stop_on_error: true },
  ]);
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/a')] });
  const got = await until('a sent 1', async () => { const n = await client.ok('get_notifier', { k, i: 'a' }); return n.stats.sent === 1 && n; });
  t.like(got, list[0]);
  const { outbox, ...figures } = got.stats;
  // a durable notifier refuses at its bound (overflow): the mode and the events refused are shown
  t.deepEqual(figures, { queued: 0, queued_bytes: 0, sent: 1, failed: 0, dropped: 0, overflow: 'refuse', refused: 0, test: 'skipped', state: 'ok', since: null, last_error: null });
  // a json hook is durable by default: its outbox wrote the event and let it go once delivered
  t.like(outbox, { held: 0, refused: 0, dead_letters: 0 });
  t.true(outbox.fsyncs >= 1);
  const direct = await client.get('get_notifier', { k, i: 'b' });
  t.is(direct.status, 200);
  t.like(direct.body, { id: 'b', enabled: false, stats: { queued: 0, sent: 0, failed: 0, dropped: 0, test: 'not run' } });
});

test('notifier functions: unknown id 404, missing id 400, master only', async (t) => {
  const rcv = await Receiver.start(t);
  const { client } = await startController(t, { files: notifierFiles({ a: { type: 'json', uri: rcv.uri, skip_test: true } }) });
  for (const fn of ['get_notifier', 'enable_notifier', 'disable_notifier']) {
    const missing = await client.get(fn, { k, i: 'nope' });
    t.is(missing.status, 404, fn);
    t.is(missing.body.result, 'ERROR');
    t.is((await client.rpc(fn, { k, i: 'nope' })).error?.code, 1, fn);
    t.is((await client.get(fn, { k })).status, 400, fn);
    t.is((await client.rpc(fn, { k })).error?.code, 11, fn);
    t.is((await client.get(fn, { k: Keys.ops, i: 'a' })).status, 403, fn);
  }
  t.is((await client.rpc('list_notifiers', { k: Keys.ops })).error?.code, 2);
});

test('enable_notifier and disable_notifier last until restart', async (t) => {
  const rcv = await Receiver.start(t);
  rcv.answer = (r) => ({ body: r.json?.data?.[0]?.oid === 'sensor:g/held' ? '{"result":"ERROR"}' : '{"result":"OK"}' });
  const running = await startController(t, {
    files: notifierFiles({
      on: { type: 'json', uri: `${rcv.uri}?n=on`, skip_test: true, retry_delay: 5, events: subscribeAll },
      off: { type: 'json', uri: `${rcv.uri}?n=off`, enabled: false, events: subscribeAll },
    }),
  });
  const { client, dir } = running;
  const fileBefore = fs.readFileSync(path.join(dir, 'runtime/uc_notify.d/on.json'), 'utf8');
  const oidsOf = (n: string) => rcv.requests.filter((r) => r.url.searchParams.get('n') === n).flatMap((r) => r.json.data.map((e: any) => e.oid));

  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/one')] });
  await until('on delivers', () => oidsOf('on').includes('sensor:g/one'), 15_000);
  t.deepEqual(oidsOf('off'), []);

  // disabling drops what waits (here a batch waiting for its retry) and takes no new events
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/held')] });
  await until('held fails', async () => (await stats(client, k, 'on')).failed === 1, 15_000);
  t.deepEqual(await client.ok('disable_notifier', { k, i: 'on' }), { ok: true });
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/two')] });
  t.like(await client.ok('get_notifier', { k, i: 'on' }), { enabled: false, stats: { queued: 0, dropped: 1, sent: 1 } });

  t.is((await client.get('enable_notifier', { k, i: 'off' })).body.result, 'OK');
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/three')] });
  await until('off delivers once enabled', () => oidsOf('off').includes('sensor:g/three'), 15_000);
  t.deepEqual(oidsOf('off'), ['sensor:g/three']);
  t.false(oidsOf('on').includes('sensor:g/two'));
  t.false(oidsOf('on').includes('sensor:g/three'));

  // the files are untouched: a restart brings the configured states back
  t.is(fs.readFileSync(path.join(dir, 'runtime/uc_notify.d/on.json'), 'utf8'), fileBefore);
  await running.stop();
  const again = await startController(t, { dir });
  const list = await again.client.ok('list_notifiers', { k });
  t.deepEqual(list.map((n: any) => [n.id, n.enabled]), [['off', false], ['on', true]]);
});
