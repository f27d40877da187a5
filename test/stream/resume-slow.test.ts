import test from 'ava';
import { Keys } from '../helpers/controller';
import { TestStream, slowAndFast } from '../helpers/stream-client';
import { until } from '../helpers/wait';

// alone in its file (its own process), as slow.test.ts: the flood keeps the event loop busy

const floodSeqs = (messages: any[]) => messages.filter((m) => m.s === 'log' && /^flood /.test(m.d[0].msg)).map((m) => m.seq as number);

test('a client closed with 4008 for slowness resumes from the last seq it got: every event once, in order', async (t) => {
  const { url, client, sub, slow, fast, flood } = await slowAndFast(t);
  const total = 20_000; // 20 MB in all: more than socket buffers hold
  await flood(total);
  slow.ws.resume();
  t.is((await slow.closed).code, 4008);
  t.like(slow.messages[slow.messages.length - 1], { s: 'error', message: 'too slow: send buffer full' });
  const before = floodSeqs(slow.messages);
  t.true(before.length > 0 && before.length < total, `${before.length} events before it was closed`);
  const last = before[before.length - 1];

  // it comes back with the last number it got
  const again = await TestStream.open(t, url, Keys.master);
  again.send({ m: 'subscribe', events: sub, since: last });
  await until('the rest of the flood', () => floodSeqs(again.messages).length >= total - before.length, 60_000);
  const all = floodSeqs(fast.messages);
  t.is(all.length, total);
  t.deepEqual([...before, ...floodSeqs(again.messages)], all, 'what it got, then what it missed: every event once, in order');
  t.false(again.messages.some((m) => m.s === 'gap' || m.s === 'error'));
  // and live afterwards
  await client.ok('log_info', { m: 'live again', k: Keys.master });
  const live = await again.next((m) => m.s === 'log' && m.d[0].msg === 'live again');
  t.true(live.seq > all[all.length - 1]);
});
