import test from 'ava';
import { Keys, startController } from '../helpers/controller';
import { Receiver } from '../helpers/receiver';
import { notifierFiles, stateEvent, stats, subscribeAll } from '../helpers/notifiers';
import { until } from '../helpers/wait';
import { jsonType, parseJsonProps } from '../../plugins/notifiers/json';

const k = Keys.master;

test('method jsonrpc: one event is a JSON RPC 2.0 notification, several a batch of them; the test a request with an id', async (t) => {
  const rcv = await Receiver.start(t);
  // the test must be answered with its own id
  rcv.answer = (r) => (r.json?.id ? { body: JSON.stringify({ jsonrpc: '2.0', result: true, id: r.json.id }) } : { body: '' });
  const { client } = await startController(t, {
    files: notifierFiles({ rpc: { type: 'http-json', method: 'jsonrpc', uri: rcv.uri, notify_key: 'nk', space: 'sp', timeout: 120, events: subscribeAll } }),
  });
  const [first] = await rcv.waitFor(1);
  t.is(first.json.jsonrpc, '2.0');
  t.is(first.json.method, 'jsonrpc');
  t.is(typeof first.json.id, 'string');
  t.deepEqual(first.json.params, { k: 'nk', subject: 'test', space: 'sp' });
  await until('test passed', async () => (await stats(client, k, 'rpc')).test === 'passed', 10_000);

  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/s1', 1, '5')] });
  const [, one] = await rcv.waitFor(2);
  t.false(Array.isArray(one.json));
  t.like(one.json, { jsonrpc: '2.0', method: 'jsonrpc', params: { k: 'nk', subject: 'state', space: 'sp' } });
  t.false('id' in one.json, 'a notification has no id');
  t.like(one.json.params.data, { oid: 'sensor:g/s1', status: 1, value: '5' });

  rcv.hold();
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/s2', 2)] });
  await rcv.waitFor(3);
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/s3', 3), stateEvent('sensor:g/s4', 4)] });
  await until('2 queued', async () => (await stats(client, k, 'rpc')).queued === 3, 10_000);
  rcv.release();
  const reqs = await rcv.waitFor(4);
  t.true(Array.isArray(reqs[3].json));
  t.deepEqual(reqs[3].json.map((n: any) => n.params.data.oid), ['sensor:g/s3', 'sensor:g/s4']);
  t.true(reqs[3].json.every((n: any) => n.jsonrpc === '2.0' && n.method === 'jsonrpc' && n.params.subject === 'state' && !('id' in n)));
  await until('all sent', async () => (await stats(client, k, 'rpc')).sent === 4, 10_000);
});

test('method jsonrpc: any 2xx answer delivers a notification (as 3.3); the test needs its own id back', async (t) => {
  const rcv = await Receiver.start(t);
  rcv.answer = (r) => (r.json?.id ? { body: JSON.stringify({ jsonrpc: '2.0', result: true, id: 'another' }) } : { body: '{"whatever":1}' });
  const { client } = await startController(t, {
    files: notifierFiles({
      rpc: { type: 'json', method: 'jsonrpc', uri: rcv.uri, events: subscribeAll, retries: 0 },
      plain: { type: 'json', uri: rcv.uri, skip_test: true, events: subscribeAll, retries: 0 },
    }),
  });
  await until('test ran', async () => (await stats(client, k, 'rpc')).test !== 'not run', 10_000);
  t.is((await stats(client, k, 'rpc')).test, 'failed', 'a result for another id is no answer to the test');
  const err = await client.rpc('test_notifier', { k, i: 'rpc' });
  t.is(err.error?.code, 10);
  rcv.answer = (r) => ({ body: JSON.stringify({ jsonrpc: '2.0', error: { code: -32601, message: 'no' }, id: r.json?.id }) });
  t.is((await client.rpc('test_notifier', { k, i: 'rpc' })).error?.code, 10, 'an error result fails the test');
  rcv.answer = () => ({ status: 202 });
  await client.ok('test_notifier', { k, i: 'rpc' });

  rcv.answer = () => ({ body: '{"whatever":1}' });
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('unit:g/u')] });
  await until('rpc sent, plain failed', async () => {
    const [r, p] = [await stats(client, k, 'rpc'), await stats(client, k, 'plain')];
    return r.sent === 1 && p.failed === 1;
  }, 10_000);
  t.is((await stats(client, k, 'plain')).sent, 0, 'the default frame wants {ok: true}, {result: "OK"}, 202 or nothing');
});

test('method list: each event with k, subject and space; the test a list of one', async (t) => {
  const rcv = await Receiver.start(t);
  rcv.answer = () => ({ body: '{"ok":true}' });
  const { client } = await startController(t, {
    files: notifierFiles({ l: { type: 'json', method: 'list', uri: rcv.uri, notify_key: 'nk', space: 'sp', events: subscribeAll } }),
  });
  const [first] = await rcv.waitFor(1);
  t.deepEqual(first.json, [{ k: 'nk', subject: 'test', space: 'sp' }]);
  await until('test passed', async () => (await stats(client, k, 'l')).test === 'passed', 10_000);
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/a', 1, 'x'), stateEvent('sensor:g/b', 0)] });
  const reqs = await rcv.waitFor(2);
  const events = reqs.slice(1).flatMap((r) => r.json);
  t.is(events.length, 2);
  for (const e of events) t.like(e, { k: 'nk', subject: 'state', space: 'sp' });
  t.like(events[0], { oid: 'sensor:g/a', status: 1, value: 'x' });
  t.false('data' in events[0]);
});

test('method: jsonrpc, list or none (null and empty too); anything else is refused', (t) => {
  const cfg = (method: unknown) => ({ id: 'n', type: 'json', enabled: true, events: [], uri: 'http://127.0.0.1:1/', method });
  t.throws(() => jsonType.validate!(cfg('xml')), { message: /method must be jsonrpc or list, not xml/ });
  for (const m of ['jsonrpc', 'list']) t.notThrows(() => jsonType.validate!(cfg(m)));
  for (const m of [null, '']) {
    const c = cfg(m);
    jsonType.validate!(c);
    t.false('method' in c);
  }
});

test('PROPS as 3.3 reads them: the notify key in the user part, the method in the fragment', (t) => {
  t.deepEqual(parseJsonProps('http://KEY1@127.0.0.1:8080/hook#jsonrpc'), { method: 'jsonrpc', notify_key: 'KEY1', uri: 'http://127.0.0.1:8080/hook' });
  t.deepEqual(parseJsonProps('https://h/x#list'), { method: 'list', uri: 'https://h/x' });
  t.deepEqual(parseJsonProps('http://h:1/x'), { uri: 'http://h:1/x' });
  t.throws(() => parseJsonProps('http://h/x#soap'), { message: /jsonrpc or list/ });
  t.throws(() => parseJsonProps('http://@h/x'), { message: /empty notify key/ });
});

test('a notify key $ID is the API key with that id (as 3.3); an unknown id sends no k', async (t) => {
  const rcv = await Receiver.start(t);
  const none = await Receiver.start(t);
  const { client } = await startController(t, {
    files: notifierFiles({
      byid: { type: 'json', uri: rcv.uri, notify_key: '$ops', skip_test: true, events: subscribeAll },
      unknown: { type: 'json', method: 'list', uri: none.uri, notify_key: '$nosuch', skip_test: true, events: subscribeAll },
    }),
  });
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/s')] });
  const [r] = await rcv.waitFor(1);
  t.is(r.json.k, Keys.ops);
  const [n] = await none.waitFor(1);
  t.false('k' in n.json[0]);
  t.is((await client.ok('get_notifier', { k, i: 'byid' })).notify_key, '$ops', 'the file keeps the id, not the key');
});
