import test from 'ava';
import { startController, Keys, type Client } from '../helpers/controller';
import { failsBoth, Err } from '../helpers/api-errors';
import { until } from '../helpers/wait';
import { withProbe } from '../helpers/probe-plugin';

const k = Keys.ops; // allow = lock, not master
const m = Keys.master;

const stats = (client: Client) => client.ok('probe_locks', { k: m }) as Promise<{ locks: number; locked: number; waiters: number; timers: number }>;

test('lock, get_lock, unlock and their aliases through both transports', async (t) => {
  const { client } = await startController(t);
  t.deepEqual(await client.ok('lock', { k, l: 'a' }), { ok: true });
  t.deepEqual(await client.ok('get_lock', { k, l: 'a' }), { id: 'a', locked: true, type: 'lock' });
  t.deepEqual((await client.get('lock_get', { k, l: 'a' })).body, { id: 'a', locked: true, type: 'lock' });
  t.deepEqual((await client.get('unlock', { k, l: 'a' })).body, { result: 'OK' });
  t.deepEqual((await client.post('get_lock', { k, l: 'a' })).body, { id: 'a', locked: false, type: 'lock' });
  t.deepEqual((await client.post('lock_acquire', { k, l: 'a', t: 1 })).body, { result: 'OK' });
  t.deepEqual(await client.ok('lock_release', { k, l: 'a' }), { ok: true });
  // unlock of an unlocked known lock is fine
  t.deepEqual(await client.ok('unlock', { k, l: 'a' }), { ok: true });
});

test('unknown locks answer 1 / 404; keys without allow=lock 2 / 403; bad t or e 11 / 400', async (t) => {
  const { client } = await startController(t);
  await failsBoth(t, client, 'get_lock', { k, l: 'nope' }, Err.notFound);
  await failsBoth(t, client, 'unlock', { k, l: 'nope' }, Err.notFound);
  for (const fn of ['get_lock', 'lock', 'unlock']) await failsBoth(t, client, fn, { k: Keys.plain, l: 'x' }, Err.denied);
  await failsBoth(t, client, 'lock', { k, l: 'x', t: -1 }, Err.invalid);
  await failsBoth(t, client, 'lock', { k, l: 'x', e: 0 }, Err.invalid);
  await failsBoth(t, client, 'lock', { k, l: 'x', t: 'soon' }, Err.invalid);
  await failsBoth(t, client, 'lock', { k }, Err.invalid);
  await failsBoth(t, client, 'lock', { k, l: '' }, Err.invalid);
  await failsBoth(t, client, 'lock', { k, l: 'x'.repeat(257) }, Err.invalid); // ids are kept: their length is bounded
  await client.ok('lock', { k, l: 'y'.repeat(256) });
  // a refused call created nothing
  await failsBoth(t, client, 'get_lock', { k, l: 'x' }, Err.notFound);
});

test('t and e longer than a timer can wait answer 11 / 400, not a wait or expiry that ends at once', async (t) => {
  const { client } = await startController(t);
  const tooLong = 30 * 86400; // past 2^31 ms: a node timer of that length would fire after 1 ms
  await failsBoth(t, client, 'lock', { k, l: 'long', e: tooLong }, Err.invalid);
  await client.ok('lock', { k, l: 'long', e: 20 * 86400 });
  await failsBoth(t, client, 'lock', { k, l: 'long', t: tooLong }, Err.invalid);
  await new Promise((r) => setTimeout(r, 100));
  t.like(await client.ok('get_lock', { k, l: 'long' }), { locked: true }, 'a long expiry within the bound holds');
  await client.ok('unlock', { k, l: 'long' });
});

test('a lock not acquired within t answers 10 / 500 (as 3.3); t defaults to [server] timeout', async (t) => {
  const { client } = await startController(t, { ini: { server: { timeout: 0.3 } }, files: withProbe });
  await client.ok('lock', { k, l: 'busy' });
  await failsBoth(t, client, 'lock', { k, l: 'busy', t: 0.1 }, Err.failed);
  await failsBoth(t, client, 'lock', { k, l: 'busy', t: 0 }, Err.failed);
  const started = Date.now();
  const r = await client.rpc('lock', { k, l: 'busy' });
  t.is(r.error?.code, 10);
  t.true(Date.now() - started >= 250, 'the default wait is the configured timeout');
  t.like(await stats(client), { waiters: 0, timers: 0, locked: 1 });
});

test('e releases the lock automatically and the next waiter gets it', async (t) => {
  const { client } = await startController(t, { files: withProbe });
  await client.ok('lock', { k, l: 'exp', e: 0.3 });
  // this waiter would time out after 10 s: it is served by the expiry instead
  await client.ok('lock', { k, l: 'exp', t: 10, e: 0.2 });
  await until('second expiry', async () => !(await client.ok('get_lock', { k, l: 'exp' })).locked);
  t.like(await stats(client), { waiters: 0, timers: 0, locked: 0 });
  // an unlock before the expiry clears it
  await client.ok('lock', { k, l: 'exp', e: 30 });
  t.like(await stats(client), { timers: 1, locked: 1 });
  await client.ok('unlock', { k, l: 'exp' });
  t.like(await stats(client), { timers: 0, locked: 0 });
});

test('waiters are served first come, first served', async (t) => {
  const { client } = await startController(t, { files: withProbe });
  await client.ok('lock', { k, l: 'q' });
  const served: number[] = [];
  const calls: Promise<void>[] = [];
  for (let i = 0; i < 10; i++) {
    calls.push(client.ok('lock', { k, l: 'q', t: 30 }).then(() => { served.push(i); }));
    // the next one is sent only when this one is queued, so the arrival order is known
    await until(`waiter ${i} queued`, async () => (await stats(client)).waiters === i + 1);
  }
  for (let i = 0; i < 10; i++) {
    await client.ok('unlock', { k, l: 'q' });
    await until(`waiter ${i} served`, () => served.length === i + 1);
  }
  await Promise.all(calls);
  t.deepEqual(served, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  t.like(await stats(client), { waiters: 0, timers: 0, locked: 1 });
});

test('300 concurrent waiters: each served once, never two at a time, no wake-up lost, no timer left', async (t) => {
  const { client } = await startController(t, { files: withProbe });
  const n = 300;
  let inside = 0;
  let overlaps = 0;
  const served = new Map<number, number>();
  await client.ok('lock', { k, l: 'hot' });
  const workers = Array.from({ length: n }, async (_, i) => {
    await client.ok('lock', { k, l: 'hot', t: 60 });
    inside++;
    if (inside > 1) overlaps++;
    served.set(i, (served.get(i) ?? 0) + 1);
    // hold it across a real round trip, so an overlap would be seen
    const state = await client.ok('get_lock', { k, l: 'hot' });
    if (!state.locked) overlaps++;
    inside--;
    await client.ok('unlock', { k, l: 'hot' });
  });
  await until('all waiters queued', async () => (await stats(client)).waiters === n, 60_000);
  await client.ok('unlock', { k, l: 'hot' });
  await Promise.all(workers);
  t.is(overlaps, 0);
  t.is(served.size, n);
  t.true([...served.values()].every((c) => c === 1));
  t.deepEqual(await stats(client), { locks: 1, locked: 0, waiters: 0, timers: 0 });
});

test('waiters that timed out leave the queue: the next release goes to one still waiting', async (t) => {
  const { client } = await startController(t, { files: withProbe });
  await client.ok('lock', { k, l: 'w' });
  const early = Array.from({ length: 5 }, () => client.rpc('lock', { k, l: 'w', t: 3 }));
  await until('early waiters queued', async () => (await stats(client)).waiters === 5);
  const patient = client.rpc('lock', { k, l: 'w', t: 30 });
  for (const r of await Promise.all(early)) t.is(r.error?.code, 10);
  t.like(await stats(client), { waiters: 1, timers: 1 });
  await client.ok('unlock', { k, l: 'w' });
  t.deepEqual((await patient).result, { ok: true });
  t.like(await stats(client), { waiters: 0, timers: 0, locked: 1 });
  // and with nobody waiting, a release leaves it unlocked
  await client.ok('unlock', { k, l: 'w' });
  t.like(await client.ok('get_lock', { k, l: 'w' }), { locked: false });
});

test('the waiters of one lock and the number of locks are bounded', async (t) => {
  const { client } = await startController(t, { ini: { server: { lock_max_waiters: 2, locks_max: 2 } }, files: withProbe });
  await client.ok('lock', { k, l: 'a' });
  const waiting = [client.rpc('lock', { k, l: 'a', t: 30 }), client.rpc('lock', { k, l: 'a', t: 30 })];
  await until('two waiters', async () => (await stats(client)).waiters === 2);
  await failsBoth(t, client, 'lock', { k, l: 'a', t: 30 }, Err.busy);
  await client.ok('lock', { k, l: 'b' });
  await failsBoth(t, client, 'lock', { k, l: 'c' }, Err.failed);
  await client.ok('unlock', { k, l: 'a' });
  await client.ok('unlock', { k, l: 'a' });
  for (const r of await Promise.all(waiting)) t.deepEqual(r.result, { ok: true });
});

test('stopping the controller with a waiter queued neither hangs nor fails', async (t) => {
  const { client, stop } = await startController(t, { files: withProbe });
  await client.ok('lock', { k, l: 's', e: 60 });
  const waiter = client.rpc('lock', { k, l: 's', t: 60 }).catch((e: Error) => e);
  await until('queued', async () => (await stats(client)).waiters === 1);
  await stop();
  const r = await waiter;
  // the waiter is either refused (13) or cut off with the connection; it is never left hanging
  t.true(r instanceof Error || (r as { error?: { code: number } }).error?.code === 13);
});

test('list_locks: every known lock by id, held or not, with the end of its hold; allow=lock or master', async (t) => {
  const { client } = await startController(t);
  t.deepEqual(await client.ok('list_locks', { k }), []);
  const before = Date.now() / 1000;
  await client.ok('lock', { k, l: 'b', e: 3600 });
  await client.ok('lock', { k, l: 'a' });
  await client.ok('lock', { k, l: 'c' });
  await client.ok('unlock', { k, l: 'c' });
  const all = await client.ok('list_locks', { k: m });
  t.deepEqual(all.map((l: any) => [l.id, l.locked, l.type, l.waiting]), [['a', true, 'lock', 0], ['b', true, 'lock', 0], ['c', false, 'lock', 0]]);
  t.is(all[0].expires, null, 'held until unlock');
  t.true(all[1].expires >= before + 3600 && all[1].expires <= Date.now() / 1000 + 3600, `b's hold ends in an hour: ${all[1].expires}`);
  await client.ok('unlock', { k, l: 'b' });
  t.is((await client.ok('list_locks', { k })).find((l: any) => l.id === 'b').expires, null, 'a released lock has no end of hold');
  await failsBoth(t, client, 'list_locks', { k: Keys.plain }, Err.denied);
});
