import test from 'ava';
import { Keys } from '../helpers/controller';
import { Logger } from '../../core/log';
import { TestStream, startStreamController } from '../helpers/stream-client';
import { until } from '../helpers/wait';

// alone in its file (its own process), as slow.test.ts: the flood keeps the event loop busy

const floodSeqs = (messages: any[]) => messages.filter((m) => m.s === 'log' && /^flood /.test(m.d[0].msg)).map((m) => m.seq as number);

test('a client closed with 4008 for slowness resumes from the last seq it got: every event once, in order', async (t) => {
  const { ctl, url, client } = await startStreamController(t, { webapi: { ws_max_buffer: 256 * 1024, ws_ping_interval: 600 } });
  const sub = [{ subject: 'log', level: 'info' }];
  const slow = await TestStream.open(t, url, Keys.master, sub);
  const fast = await TestStream.open(t, url, Keys.master, sub);
  slow.ws.pause();
  const log = ctl.get(Logger).module('flood');
  const pad = 'x'.repeat(1000); // 20 MB in all: more than socket buffers hold
  const total = 20_000;
  let got = 0;
  fast.ws.on('message', () => { got++; });
  for (let i = 0; i < total; i += 500) {
    for (let j = i; j < i + 500; j++) log.info(`flood ${j} ${pad}`);
    await until('the reader to catch up', () => got >= i + 500, 30_000);
  }
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
