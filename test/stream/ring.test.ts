import test from 'ava';
import { EventRing, ENTRY_OVERHEAD } from '../../plugins/stream/ring';

test('the ring holds the newest events within both bounds and finds each by its number, across wraps and growth', (t) => {
  // a byte bound that drops the oldest long before the count is reached, then events small enough to fill past
  // the first capacity (1024): the ring grows while its oldest is in the middle of its slots
  const ring = new EventRing(3000, 250_000, 1000);
  const texts = new Map<number, string>();
  let seq = 1000;
  for (let i = 0; i < 5000; i++) {
    const text = `event ${i} ${'x'.repeat(i < 1500 ? 400 : 10)}`;
    ring.push('log', text);
    texts.set(++seq, text);
    if (ring.count > 3000 || ring.bytes > 250_000) t.fail(`past a bound at ${i}: ${ring.count} events, ${ring.bytes} bytes`);
  }
  t.is(ring.last, seq);
  t.is(ring.count, 3000, 'the count bound wins for the small ones');
  t.is(ring.floor, seq - 3000);
  t.is(ring.dropped, 2000);
  let bytes = 0;
  for (let n = ring.floor + 1; n <= ring.last; n++) {
    const e = ring.at(n);
    if (e?.text !== texts.get(n)) t.fail(`seq ${n}: ${e?.text.slice(0, 20)}`);
    bytes += texts.get(n)!.length + ENTRY_OVERHEAD;
  }
  t.is(ring.bytes, bytes);
  t.is(ring.at(ring.floor), undefined);
  t.is(ring.at(ring.last + 1), undefined);
  // one event larger than the byte bound: nothing before it is kept, nor it
  ring.push('log', 'y'.repeat(250_000));
  t.deepEqual([ring.count, ring.bytes, ring.floor, ring.last], [0, 0, seq + 1, seq + 1]);
  ring.push('state', 'after');
  t.deepEqual(ring.at(seq + 2), { subject: 'state', text: 'after' });
});
