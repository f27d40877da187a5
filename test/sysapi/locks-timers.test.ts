import 'reflect-metadata';
import test from 'ava';
import { LockTable } from '../../plugins/sysapi/locks';

/**
 * In a process of its own (ava runs each file in one) with nothing else
 * going on, the node runtime's own list of live timers is the judge: after
 * hundreds of waiters were served, timed out or auto-released, none is left.
 */
const liveTimers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

test('hundreds of waiters, timeouts and expiries leave no live timer behind', async (t) => {
  const baseline = liveTimers();
  const table = new LockTable({ locksMax: 1000, maxWaiters: 1000, defaultTimeout: 5, idMax: 256 });
  await table.acquire('a', 0, 30);
  let inside = 0;
  let overlaps = 0;
  const served: number[] = [];
  // 300 patient waiters, each holding the lock with an auto-release it never reaches
  const patient = Array.from({ length: 300 }, (_, i) => table.acquire('a', 30, 60).then(async () => {
    if (++inside > 1) overlaps++;
    served.push(i);
    await new Promise((r) => setImmediate(r));
    inside--;
    table.release('a');
  }));
  // 100 impatient ones that time out while queued between them
  const impatient = Array.from({ length: 100 }, () => table.acquire('a', 0.05).then(() => 'acquired', (e: Error) => e.message));
  t.true(liveTimers() >= baseline + 400);
  const refused = await Promise.all(impatient);
  t.true(refused.every((m) => /unable to acquire lock a within/.test(m)));
  table.release('a');
  await Promise.all(patient);
  t.is(overlaps, 0);
  t.deepEqual(served, Array.from({ length: 300 }, (_, i) => i));
  // a lock released by its expiry
  await table.acquire('b', 0, 0.05);
  await table.acquire('b', 5);
  table.release('b');
  t.deepEqual(table.stats(), { locks: 2, locked: 0, waiters: 0, timers: 0 });
  t.is(liveTimers(), baseline);
});
