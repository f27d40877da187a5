import test from 'ava';
import { Keys, startController } from '../helpers/controller';
import { Receiver } from '../helpers/receiver';
import { WebhookDefaults } from '../../plugins/notifiers/webhook';
import { notifierFiles, stateEvent, stats, subscribeAll } from '../helpers/notifiers';
import { until } from '../helpers/wait';

const k = Keys.master;

test('json posts {k, subject, space, data} and the start-up test has subject test', async (t) => {
  const rcv = await Receiver.start(t);
  const { client } = await startController(t, {
    files: notifierFiles({ hook: { type: 'json', uri: rcv.uri, notify_key: 'secret1', space: 'plant1', events: subscribeAll } }),
  });
  const [first] = await rcv.waitFor(1);
  t.is(first.method, 'POST');
  t.deepEqual(first.json, { k: 'secret1', subject: 'test', space: 'plant1' });
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:env/temp', 1, '21.5')] });
  const [, second] = await rcv.waitFor(2);
  t.is(second.json.k, 'secret1');
  t.is(second.json.subject, 'state');
  t.is(second.json.space, 'plant1');
  t.is(second.json.data.length, 1);
  t.like(second.json.data[0], { oid: 'sensor:env/temp', status: 1, value: '21.5' });
});

test('http-json files are read as json', async (t) => {
  const rcv = await Receiver.start(t);
  const { client } = await startController(t, {
    files: notifierFiles({ old: { type: 'http-json', uri: rcv.uri, skip_test: true, events: subscribeAll } }),
  });
  t.is((await client.ok('get_notifier', { k, i: 'old' })).type, 'json');
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('unit:a/b')] });
  const [r] = await rcv.waitFor(1);
  t.is(r.json.data[0].oid, 'unit:a/b');
});

test('events queued while a request is out go together in the next request', async (t) => {
  const rcv = await Receiver.start(t);
  const { client } = await startController(t, {
    // held requests must not time out and go again (a loaded machine): timeout 120
    files: notifierFiles({ hook: { type: 'json', uri: rcv.uri, skip_test: true, timeout: 120, events: subscribeAll } }),
  });
  rcv.hold();
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/s0', 0)] });
  await rcv.waitFor(1);
  const more = [1, 2, 3, 4].map((i) => stateEvent(`sensor:g/s${i}`, i));
  await client.ok('t_emit', { k, s: 'state', d: more });
  await until('5 queued', async () => (await stats(client, k, 'hook')).queued === 5, 15_000);
  rcv.release();
  const reqs = await rcv.waitFor(2);
  t.is(reqs.length, 2);
  t.deepEqual(reqs[1].json.data.map((e: any) => e.status), [1, 2, 3, 4]);
  await until('5 sent', async () => (await stats(client, k, 'hook')).sent === 5, 15_000);
});

for (const [name, answer] of [
  ['{"result":"OK"}', { body: '{"result":"OK"}' }],
  ['HTTP 202', { status: 202, body: 'accepted, whatever' }],
  ['an empty body', { body: '' }],
  ['{"ok":true}', { body: '{"ok":true}' }],
] as const) {
  test(`an answer of ${name} is a success`, async (t) => {
    const rcv = await Receiver.start(t);
    rcv.answer = () => answer;
    const { client } = await startController(t, {
      files: notifierFiles({ hook: { type: 'json', uri: rcv.uri, skip_test: true, retries: 0, events: subscribeAll } }),
    });
    await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/x')] });
    const s = await until('hook queued 0', async () => { const s = await stats(client, k, 'hook'); return s.queued === 0 && s; });
    t.like(s, { sent: 1, failed: 0, dropped: 0 });
  });
}

for (const [name, answer] of [
  ['{"result":"ERROR"}', { body: '{"result":"ERROR"}' }],
  ['HTTP 500', { status: 500, body: '{"result":"OK"}' }],
  ['a body that is not JSON', { body: 'fine' }],
  ['{"ok":false}', { body: '{"ok":false}' }],
] as const) {
  test(`an answer of ${name} is a failure`, async (t) => {
    const rcv = await Receiver.start(t);
    rcv.answer = () => answer;
    const { client } = await startController(t, {
      files: notifierFiles({ hook: { type: 'json', uri: rcv.uri, skip_test: true, retries: 0, durable: false, events: subscribeAll } }),
    });
    await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/x')] });
    const s = await until('hook dropped 1', async () => { const s = await stats(client, k, 'hook'); return s.dropped === 1 && s; });
    t.like(s, { sent: 0, failed: 1, queued: 0 });
  });
}

test('timeout ends a request that gets no answer', async (t) => {
  const rcv = await Receiver.start(t);
  rcv.hold();
  const { client } = await startController(t, {
    files: notifierFiles({ hook: { type: 'json', uri: rcv.uri, skip_test: true, timeout: 0.3, retries: 0, durable: false, events: subscribeAll } }),
  });
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/x')] });
  const s = await until('hook dropped 1', async () => { const s = await stats(client, k, 'hook'); return s.dropped === 1 && s; });
  t.like(s, { sent: 0, failed: 1, queued: 0 });
});

test('credentials in the uri go as basic auth', async (t) => {
  const rcv = await Receiver.start(t);
  const uri = rcv.uri.replace('http://', 'http://hook%20user:p%40ss@');
  await startController(t, { files: notifierFiles({ hook: { type: 'json', uri, events: subscribeAll } }) });
  const [probe] = await rcv.waitFor(1);
  t.is(probe.authorization, `Basic ${Buffer.from('hook user:p@ss').toString('base64')}`);
  t.is(probe.json.subject, 'test');
});

test('an answer longer than the read bound is a failure', async (t) => {
  const rcv = await Receiver.start(t);
  rcv.answer = () => ({ body: ' '.repeat(WebhookDefaults.max_answer_bytes) + '{"result":"OK"}' });
  const { client } = await startController(t, {
    files: notifierFiles({ hook: { type: 'json', uri: rcv.uri, skip_test: true, retries: 0, durable: false, events: subscribeAll } }),
  });
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/x')] });
  const s = await until('hook dropped 1', async () => { const s = await stats(client, k, 'hook'); return s.dropped === 1 && s; });
  t.like(s, { sent: 0, failed: 1 });
});

test('a batch holds at most max_batch events', async (t) => {
  const rcv = await Receiver.start(t);
  rcv.hold();
  const { client } = await startController(t, {
    files: notifierFiles({ hook: { type: 'json', uri: rcv.uri, skip_test: true, timeout: 120, max_batch: 2, events: subscribeAll } }),
  });
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/s', 0)] });
  await rcv.waitFor(1);
  await client.ok('t_emit', { k, s: 'state', d: [1, 2, 3, 4, 5].map((i) => stateEvent('sensor:g/s', i)) });
  rcv.release();
  const reqs = await rcv.waitFor(4);
  t.deepEqual(reqs.map((r) => r.json.data.map((e: any) => e.status)), [[0], [1, 2], [3, 4], [5]]);
});
