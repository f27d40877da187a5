import test from 'ava';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import { makeDir } from '../helpers/controller';
import { Journal } from '../../core/toolkit/journal';

/*
 * A journal write (the outbox's, the items file's) encodes its record once
 * into bytes; the JSON text it was made from must not stay alive while the
 * write and its fsync run in the thread pool. Kept, a large value was held
 * three times for milliseconds (value, text, bytes): long enough to outlive
 * the young generation, then freed only by a full collection, which is what
 * made the peak RSS of large updates through a durable web hook wander
 * (queue-memory-runs.test.ts measures that peak).
 */

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

test('while a journal write runs, the JSON text of its record is no longer held (only its bytes)', async (t) => {
  const journal = new Journal(path.join(makeDir(t), 'x'));
  journal.open(0);
  // a flat string (repeat makes a rope, which the encoding would flatten in the middle of the measure)
  const value = Buffer.alloc(32 * 1024 * 1024, 'v').toString('latin1');
  gc();
  const before = v8.getHeapStatistics().used_heap_size;
  const write = journal.appendAsync({ a: [[1, 'state', { value }, 0]] });
  // the write is under way (its callback cannot run before this test yields)
  gc();
  const during = v8.getHeapStatistics().used_heap_size;
  await write;
  const grew = during - before;
  t.true(grew < 8 * 1024 * 1024, `the heap grew by ${(grew / 1024 / 1024).toFixed(1)} MiB during the write (the text is 32 MiB)`);
  t.is(journal.bytes > value.length, true);
  journal.close();
});
