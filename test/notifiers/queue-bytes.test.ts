import test from 'ava';
import { Keys, startController } from '../helpers/controller';
import { EventQueue } from '../../plugins/notifiers/host/queue';
import { EVENT_OVERHEAD, eventSize } from '../../plugins/notifiers/host/event-size';
import { Receiver } from '../helpers/receiver';
import { actionEvent, notifierFiles, stateEvent, stats, subscribeAll } from '../helpers/notifiers';
import { until } from '../helpers/wait';

const k = Keys.master;

test('an event is measured by its large texts plus a constant, without encoding it', (t) => {
  t.is(eventSize('state', stateEvent('sensor:g/s', 1, 'x'.repeat(1000))), EVENT_OVERHEAD + 1000);
  t.is(eventSize('state', { ...stateEvent('unit:g/u', 1, 'ab'), nvalue: 'abc' }), EVENT_OVERHEAD + 5);
  t.is(eventSize('state', stateEvent('sensor:g/s', 1, null)), EVENT_OVERHEAD);
  t.is(eventSize('action', { ...actionEvent('unit:g/u', 'failed'), out: 'o'.repeat(10), err: 'e'.repeat(20), nvalue: 'v' }), EVENT_OVERHEAD + 31);
  t.is(eventSize('log', { msg: 'm'.repeat(50), mod: 'mod', h: 'host' }), EVENT_OVERHEAD + 57);
  t.is(eventSize('state', null), EVENT_OVERHEAD);
});

test('the queue holds events up to its byte bound exactly: one byte more drops the oldest, and taking frees the bytes', (t) => {
  const q = new EventQueue(1000, 300);
  t.is(q.push('state', 'a', 100), 0);
  t.is(q.push('log', 'b', 100), 0);
  t.is(q.push('state', 'c', 100), 0, 'exactly at the bound: all kept');
  t.is(q.bytes, 300);
  t.is(q.push('state', 'd', 1), 1, 'one byte past it: the oldest goes');
  t.is(q.bytes, 201);
  t.is(q.push('state', 'e', 250), 2, 'a large one makes room for itself with as many of the oldest as needed');
  t.deepEqual([q.size, q.bytes], [2, 251]);
  t.is(q.push('state', 'f', 500), 2, 'one larger than the bound on its own is kept alone');
  t.deepEqual([q.size, q.bytes], [1, 500]);
  const taken = q.take(10)!;
  t.deepEqual([taken.events, taken.bytes, q.size, q.bytes], [['f'], 500, 0, 0]);
  q.push('state', 'g', 10);
  q.push('action', 'h', 20);
  t.is(q.clear(), 2);
  t.is(q.bytes, 0);
  // a batch is bounded in bytes too, and holds at least one event
  const w = new EventQueue(1000, 10_000);
  for (const [e, b] of [['i', 100], ['j', 100], ['k', 50], ['l', 400]] as const) w.push('state', e, b);
  t.deepEqual(w.take(10, 200)!.events, ['i', 'j'], 'exactly at the byte bound of a batch');
  t.deepEqual(w.take(10, 49)!.events, ['k'], 'one event even when it alone is over');
  t.deepEqual(w.take(10, 399)!.events, ['l']);
  t.is(w.bytes, 0);
  // the event count bound still holds on its own
  const n = new EventQueue(2, 1e9);
  n.push('state', 1, 1);
  n.push('state', 2, 1);
  t.is(n.push('state', 3, 1), 1);
  t.deepEqual([n.size, n.bytes], [2, 2]);
});

const VALUE = 1000;
const ONE = EVENT_OVERHEAD + VALUE;

for (const [where, bytes, kept] of [
  ['the notifier file, exactly three events', 3 * ONE, 3],
  ['[notifiers], one byte short of three events', 3 * ONE - 1, 2],
] as const) {
  test(`at the byte bound (${where}) the oldest waiting events are dropped and counted; get_notifier shows the bytes`, async (t) => {
    const rcv = await Receiver.start(t);
    rcv.hold();
    const inFile = where.startsWith('the notifier file');
    const { client } = await startController(t, {
      ini: inFile ? {} : { notifiers: { queue_max_bytes: bytes } },
      // the held request must not time out (and count as failed) however long a loaded machine takes to get here
      files: notifierFiles({ hook: { type: 'json', uri: rcv.uri, skip_test: true, timeout: 120, ...(inFile ? { queue_max_bytes: bytes } : {}), durable: false, events: subscribeAll } }),
    });
    const v = (i: number) => String(i).padEnd(VALUE, 'x');
    await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/s', 0, v(0))] });
    await rcv.waitFor(1);
    await client.ok('t_emit', { k, s: 'state', d: [1, 2, 3, 4, 5, 6, 7, 8, 9].map((i) => stateEvent('sensor:g/s', i, v(i))) });
    t.like(await stats(client, k, 'hook'), { queued: 1 + kept, queued_bytes: (1 + kept) * ONE, dropped: 9 - kept, sent: 0 });
    rcv.release();
    const s = await until('hook queued 0', async () => { const s = await stats(client, k, 'hook'); return s.queued === 0 && s; });
    t.like(s, { sent: 1 + kept, dropped: 9 - kept, failed: 0, queued_bytes: 0 });
    const statuses = [0, ...[7, 8, 9].slice(3 - kept)];
    t.deepEqual(rcv.requests.flatMap((r) => r.json.data).map((e: any) => e.status), statuses);
  });
}
