import test from 'ava';
import { Keys, startController } from '../helpers/controller';
import { Receiver } from '../helpers/receiver';
import { notifierFiles, stateEvent, stats, subscribeAll } from '../helpers/notifiers';
import { until } from '../helpers/wait';

const k = Keys.master;

test('http sends one GET per event with k, s, space and the event fields in the query', async (t) => {
  const rcv = await Receiver.start(t);
  const { client } = await startController(t, {
    files: notifierFiles({ get: { type: 'http', uri: `${rcv.uri}?fixed=1`, notify_key: 'nk', space: 'site', timeout: 120, events: subscribeAll } }),
  });
  const [probe] = await rcv.waitFor(1);
  t.is(probe.method, 'GET');
  t.deepEqual(Object.fromEntries(probe.url.searchParams), { fixed: '1', k: 'nk', s: 'test', space: 'site' });
  rcv.hold();
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:env/t', 1, '20')] });
  await rcv.waitFor(2);
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:env/u', 0), stateEvent('sensor:env/v', -1)] });
  rcv.release();
  const reqs = await rcv.waitFor(4);
  const q = Object.fromEntries(reqs[1].url.searchParams);
  t.like(q, { k: 'nk', s: 'state', space: 'site', oid: 'sensor:env/t', group: 'env', id: 't', type: 'sensor', status: '1', value: '20' });
  t.false('value' in Object.fromEntries(reqs[2].url.searchParams)); // a null value is left out
  t.deepEqual(reqs.slice(1).map((r) => r.url.searchParams.get('oid')), ['sensor:env/t', 'sensor:env/u', 'sensor:env/v']);
  await until('3 sent', async () => (await stats(client, k, 'get')).sent === 3, 15_000);
});

/** Which oids the receiver got, in order, when the first request for e2 fails once. */
async function orderWith(t: any, stopOnError: boolean): Promise<(string | null)[]> {
  const rcv = await Receiver.start(t);
  let failedOnce = false;
  rcv.answer = (r) => {
    if (r.url.searchParams.get('oid') === 'sensor:g/e2' && !failedOnce) {
      failedOnce = true;
      return { body: '{"result":"ERROR"}' };
    }
    return { body: '{"result":"OK"}' };
  };
  const { client } = await startController(t, {
    files: notifierFiles({
      get: { type: 'http', uri: rcv.uri, skip_test: true, stop_on_error: stopOnError, retry_delay: 0.01, timeout: 120, events: subscribeAll },
    }),
  });
  rcv.hold();
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/e0')] });
  await rcv.waitFor(1);
  await client.ok('t_emit', { k, s: 'state', d: [1, 2, 3].map((i) => stateEvent(`sensor:g/e${i}`)) });
  rcv.release();
  const s = await until('get queued 0', async () => { const s = await stats(client, k, 'get'); return s.queued === 0 && s; });
  t.like(s, { sent: 4, failed: 1, dropped: 0 });
  return rcv.requests.map((r) => r.url.searchParams.get('oid'));
}

test('stop_on_error: the batch stops at the failed event and goes on from it', async (t) => {
  t.deepEqual(await orderWith(t, true), ['sensor:g/e0', 'sensor:g/e1', 'sensor:g/e2', 'sensor:g/e2', 'sensor:g/e3']);
});

test('without stop_on_error the rest of the batch is sent and only the failed event retried', async (t) => {
  t.deepEqual(await orderWith(t, false), ['sensor:g/e0', 'sensor:g/e1', 'sensor:g/e2', 'sensor:g/e3', 'sensor:g/e2']);
});
