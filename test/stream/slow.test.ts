import test from 'ava';
import { Keys } from '../helpers/controller';
import { slowAndFast } from '../helpers/stream-client';

// alone in its file (its own process): the flood keeps the event loop busy, which other tests' pings would feel

test('a client that stops reading while 50,000 events flow is told and dropped; the others get every event', async (t) => {
  const { url, client, slow, flood } = await slowAndFast(t);
  const total = 50_000; // 50 MB in all: more than socket buffers hold
  const got = await flood(total);
  t.is(got, total, 'the reading client got every event');
  const stats = await client.ok('stream_stats', { k: Keys.master });
  t.like(stats, { dropped_slow: 1, clients: 2 });
  const metrics = await (await fetch(`${url}/metrics`, { headers: { 'X-Auth-Key': Keys.master } })).text();
  t.regex(metrics, /^eva_stream_dropped_slow_total 1$/m, 'counted in GET /metrics');
  // the controller answers meanwhile, and the slow client, reading again, learns why it was dropped
  slow.ws.resume();
  const closed = await slow.closed;
  t.is(closed.code, 4008);
  const last = slow.messages[slow.messages.length - 1];
  t.like(last, { s: 'error', message: 'too slow: send buffer full' });
  t.true(slow.messages.length < total / 2, `the slow client got ${slow.messages.length} events before its buffer filled`);
});
