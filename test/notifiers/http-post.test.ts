import test from 'ava';
import { Keys, startController } from '../helpers/controller';
import { Receiver } from '../helpers/receiver';
import { notifierFiles, stateEvent, stats, subscribeAll } from '../helpers/notifiers';
import { until } from '../helpers/wait';

const k = Keys.master;

test('http-post sends the json frame form-encoded, data as JSON text', async (t) => {
  const rcv = await Receiver.start(t);
  const { client } = await startController(t, {
    files: notifierFiles({ form: { type: 'http-post', uri: rcv.uri, notify_key: 'nk', space: 'site', timeout: 120, events: subscribeAll } }),
  });
  const [probe] = await rcv.waitFor(1);
  t.is(probe.method, 'POST');
  t.regex(probe.contentType, /application\/x-www-form-urlencoded/);
  t.deepEqual(Object.fromEntries(probe.form!), { k: 'nk', subject: 'test', space: 'site' });
  rcv.hold();
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('unit:u/a', 1, 'x')] });
  await rcv.waitFor(2);
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('unit:u/b', 2), stateEvent('unit:u/c', 3)] });
  rcv.release();
  const reqs = await rcv.waitFor(3);
  t.is(reqs[1].form!.get('subject'), 'state');
  t.is(reqs[1].form!.get('k'), 'nk');
  t.is(reqs[1].form!.get('space'), 'site');
  t.like(JSON.parse(reqs[1].form!.get('data')!)[0], { oid: 'unit:u/a', status: 1, value: 'x' });
  t.deepEqual(JSON.parse(reqs[2].form!.get('data')!).map((e: any) => e.oid), ['unit:u/b', 'unit:u/c']);
});

test('http-post counts an ERROR answer as a failure', async (t) => {
  const rcv = await Receiver.start(t);
  rcv.answer = () => ({ body: '{"result":"ERROR"}' });
  const { client } = await startController(t, {
    files: notifierFiles({ form: { type: 'http-post', uri: rcv.uri, skip_test: true, retries: 1, retry_delay: 0.01, events: subscribeAll } }),
  });
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('unit:u/a')] });
  const s = await until('form dropped 1', async () => { const s = await stats(client, k, 'form'); return s.dropped === 1 && s; });
  t.like(s, { failed: 2, sent: 0 });
});
