import test from 'ava';
import { Keys, startController } from '../helpers/controller';
import { Receiver, subjectOf } from '../helpers/receiver';
import { notifierFiles, stats } from '../helpers/notifiers';
import { startBroker, Subscriber } from '../helpers/broker';
import { controllerWith, mqttNotifier } from '../helpers/mqtt-notifier';

const k = Keys.master;

test('test_notifier: OK when the receiver answers, a disabled notifier too; both transports', async (t) => {
  const rcv = await Receiver.start(t);
  const { client } = await startController(t, {
    files: notifierFiles({
      on: { type: 'json', uri: `${rcv.uri}?n=on`, skip_test: true },
      off: { type: 'json', uri: `${rcv.uri}?n=off`, enabled: false },
    }),
  });
  t.deepEqual(await client.ok('test_notifier', { k, i: 'on' }), { ok: true });
  const direct = await client.get('test_notifier', { k, i: 'off' });
  t.is(direct.status, 200);
  t.is(direct.body.result, 'OK');
  const tests = rcv.requests.filter((r) => subjectOf(r) === 'test').map((r) => r.url.searchParams.get('n'));
  t.deepEqual(tests, ['on', 'off']);
  t.is((await stats(client, k, 'on')).test, 'passed');
  // the test enables nothing
  t.like(await client.ok('get_notifier', { k, i: 'off' }), { enabled: false });
});

test('test_notifier: a receiver that is down gives error 10 with the reason in words, secrets hidden', async (t) => {
  const rcv = await Receiver.start(t);
  const uri = rcv.uri.replace('//', '//ann:UriSecret1@');
  await rcv.close();
  const bad = await Receiver.start(t);
  bad.answer = () => ({ status: 500, body: 'refused for PwdSecret2 at //ann:UriSecret1@x' });
  const { client } = await startController(t, {
    files: notifierFiles({
      down: { type: 'json', uri, skip_test: true },
      bad: { type: 'json', uri: bad.uri, username: 'ann', password: 'PwdSecret2', skip_test: true },
    }),
  });
  const rpc = await client.rpc('test_notifier', { k, i: 'down' });
  t.is(rpc.error?.code, 10);
  t.regex(rpc.error!.message, /^notifier down test failed: .*ECONNREFUSED/);
  t.notRegex(rpc.error!.message, /UriSecret1|\n\s+at /);
  const direct = await client.get('test_notifier', { k, i: 'down' });
  t.is(direct.status, 500);
  t.is(direct.body.result, 'ERROR');
  t.is((await stats(client, k, 'down')).test, 'failed');

  const answered = await client.rpc('test_notifier', { k, i: 'bad' });
  t.is(answered.error?.code, 10);
  t.regex(answered.error!.message, /answer HTTP 500: refused for <hidden> at \/\/ann:<hidden>@x/);
  t.notRegex(answered.error!.message, /PwdSecret2|UriSecret1/);
});

test('test_notifier: a receiver that never answers gives error 10 at the notifier timeout, not a hang', async (t) => {
  const rcv = await Receiver.start(t);
  rcv.hold();
  const { client } = await startController(t, {
    files: notifierFiles({ mute: { type: 'json', uri: rcv.uri, timeout: 1, skip_test: true } }),
  });
  for (const call of [() => client.rpc('test_notifier', { k, i: 'mute' }), () => client.get('test_notifier', { k, i: 'mute' })]) {
    const t0 = Date.now();
    const r: any = await call();
    const took = Date.now() - t0;
    if ('error' in r) t.is(r.error?.code, 10);
    else t.like(r, { status: 500, body: { result: 'ERROR' } });
    t.is(r.error?.message ?? r.body._error, 'notifier mute test failed: no answer within 1 s');
    // the notifier's timeout is 1 s: well below the 15 s a hang would reach on a loaded machine
    t.true(took >= 900 && took < 15_000, `took ${took} ms`);
  }
});

test('test_notifier: unknown id is 1/404, missing id 400, master only', async (t) => {
  const rcv = await Receiver.start(t);
  const { client } = await startController(t, { files: notifierFiles({ a: { type: 'json', uri: rcv.uri, skip_test: true } }) });
  t.is((await client.rpc('test_notifier', { k, i: 'nope' })).error?.code, 1);
  t.is((await client.get('test_notifier', { k, i: 'nope' })).status, 404);
  t.is((await client.get('test_notifier', { k })).status, 400);
  t.is((await client.rpc('test_notifier', { k: Keys.ops, i: 'a' })).error?.code, 2);
  const methods = (await client.ok('rpc.discover', {})).methods.map((m: any) => m.name);
  t.true(methods.includes('test_notifier'));
});

test('test_notifier on a disabled mqtt notifier: the test reaches the broker; with the broker down, error 10 within the timeout', async (t) => {
  const broker = await startBroker(t);
  const sub = await Subscriber.connect(t, broker);
  await sub.subscribe('sp/#');
  // 5 s: a fresh connection, its CONNACK, the publish and its ack fit in it on a loaded machine too
  const c = await controllerWith(t, { mq: mqttNotifier(broker, { enabled: false, timeout: 5 }) });
  t.deepEqual(await c.ok('test_notifier', { i: 'mq' }), { ok: true });
  await sub.waitFor((m) => m.some((x) => x.topic === 'sp/test'), 10_000, 'the test message');
  t.like(await c.ok('get_notifier', { i: 'mq' }), { enabled: false, stats: { test: 'passed' } });
  await broker.stop();
  const t0 = Date.now();
  const r = await c.client.rpc('test_notifier', { k: c.k, i: 'mq' });
  t.is(r.error?.code, 10);
  t.regex(r.error!.message, /^notifier mq test failed: /);
  t.notRegex(r.error!.message, /\n\s+at /);
  t.true(Date.now() - t0 < 20_000);
});
