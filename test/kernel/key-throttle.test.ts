import test from 'ava';
import fs from 'node:fs';
import path from 'node:path';
import { startController, Keys, type Client } from '../helpers/controller';
import { Err } from '../helpers/api-errors';
import { until } from '../helpers/wait';

const m = { k: Keys.master };
const from = (ip: string) => ({ 'X-Real-IP': ip });
const LOCKED = /too many failed key checks from this address, retry in \d+ s/;

/** A call's answer and how long it took (ms). */
async function timed(client: Client, k: string, ip: string) {
  const t0 = performance.now();
  const r = await client.rpc('test', { k }, from(ip));
  return { ...r, ms: performance.now() - t0 };
}

/** A wrong key whose answer is held back past the test's end: the stop ends its request, which is no failure. */
function hold(client: Client, k: string, ip: string): void {
  void timed(client, k, ip).catch(() => undefined);
}

/** The tarpit's figure: wrong key answers held back now. */
async function waiting(client: Client): Promise<number> {
  const r = await fetch(`${client.url}/metrics`, { headers: { 'X-Auth-Key': Keys.master } });
  return Number(/^eva_auth_waiting (\d+)$/m.exec(await r.text())?.[1]);
}

test('2,000 wrong keys from an address (a script with stale keys), then 200 valid calls from it: all 200, none delayed', async (t) => {
  // a step of 60 s: a valid call made to wait would take that long, far beyond what a loaded machine adds (30 s is the line)
  const { client } = await startController(t, { ini: { webapi: { x_real_ip: true, login_free_failures: 3, login_delay: 60 } } });
  const stale = Array.from({ length: 5 }, (_, i) => `stale-key-number-${i}-0123456789`);
  const answers = [];
  // the first five: three free failures, then two held back (60 s, 120 s): not awaited, and ended by the stop
  for (const k of stale.slice(0, 3)) answers.push(await timed(client, k, '10.0.0.1'));
  for (const k of stale.slice(3)) hold(client, k, '10.0.0.1');
  // the same values again and again: they tell the sender nothing new, are answered at once and count for nothing
  for (let i = 0; i < 1995; i += 50) {
    answers.push(...await Promise.all(Array.from({ length: Math.min(50, 1995 - i) }, (_, j) => timed(client, stale[(i + j) % 5], '10.0.0.1'))));
  }
  t.is(answers.length, 1998);
  t.true(answers.every((a) => a.error?.code === Err.denied.code && a.error.message === 'invalid key'), 'every wrong key: invalid key');
  t.true(answers.every((a) => a.ms < 30_000), 'none of them held back 60 s');
  let slowest = 0;
  for (let i = 0; i < 200; i++) {
    const r = await timed(client, Keys.master, '10.0.0.1');
    t.is(r.error, undefined);
    t.is(r.result.acl.key_id, 'masterkey');
    slowest = Math.max(slowest, r.ms);
  }
  t.true(slowest < 30_000, `the slowest valid call took ${slowest.toFixed(0)} ms`);
  t.log(`slowest of 200 valid calls: ${slowest.toFixed(1)} ms`);
});

test('guessing is bounded: of 2,000 different wrong keys at once, free failures + login_pending_max are checked; the rest, a valid key too, are refused unchecked', async (t) => {
  const { client } = await startController(t, { ini: { webapi: { x_real_ip: true, login_free_failures: 5, login_pending_max: 8, login_delay: 60 } } });
  const started = performance.now();
  const all: Promise<unknown>[] = [];
  const quick: { error?: { message: string } }[] = [];
  // in waves of 100 (the 8 held back stay open meanwhile)
  for (let i = 0; i < 2000; i += 100) {
    for (let j = i; j < i + 100; j++) all.push(timed(client, `guess-${String(j).padStart(6, '0')}-abcdefghijklmnop`, '10.0.0.9').then((a) => quick.push(a)));
    await until(`answers to the first ${i + 100}`, () => quick.length >= i + 100 - 8, 60_000);
  }
  const checked = quick.filter((a) => a.error?.message === 'invalid key').length;
  const unchecked = quick.filter((a) => LOCKED.test(a.error?.message ?? '')).length;
  t.is(checked, 5, 'the free failures answered at once');
  t.is(unchecked, 1987, 'the rest refused without being checked');
  t.is(await waiting(client), 8, '8 guesses booked, their answers held back');
  // while 8 are booked, the address is refused unchecked: the valid key too, or a quick refusal would itself say "wrong"
  t.regex((await timed(client, Keys.master, '10.0.0.9')).error?.message ?? '', LOCKED);
  // another address is not affected
  t.is((await timed(client, Keys.master, '10.0.0.10')).error, undefined);
  t.log(`2,000 different keys in ${((performance.now() - started) / 1000).toFixed(1)} s: 5 checked at once, 8 booked (answered after 60 s, 180 s, ...), 1,987 refused unchecked`);
  for (const p of all) void p.catch(() => undefined);
});

test('fewer than login_pending_max booked: a valid key passes at once while wrong ones are held back', async (t) => {
  const { client } = await startController(t, { ini: { webapi: { x_real_ip: true, login_free_failures: 2, login_pending_max: 3, login_delay: 30 } } });
  for (let i = 0; i < 2; i++) t.is((await timed(client, `wrong-${i}-0123456789abcdef`, '10.1.0.1')).error?.message, 'invalid key');
  for (const k of ['wrong-2-0123456789abcdef', 'wrong-3-0123456789abcdef']) hold(client, k, '10.1.0.1');
  await until('two answers held back', async () => (await waiting(client)) === 2);
  const ok = await timed(client, Keys.master, '10.1.0.1');
  t.is(ok.error, undefined);
  t.true(ok.ms < 10_000);
  // the third booking reaches the bound: from now on a new value from the address is refused unchecked
  // (the master key passed from it just now: that one is still checked, key-throttle-known.test.ts)
  hold(client, 'wrong-4-0123456789abcdef', '10.1.0.1');
  await until('three answers held back', async () => (await waiting(client)) === 3);
  t.regex((await timed(client, 'wrong-5-0123456789abcdef', '10.1.0.1')).error?.message ?? '', LOCKED);
  t.is((await timed(client, Keys.master, '10.1.0.1')).error, undefined);
});

test('wrong keys past the free failures are answered late; held answers are bounded per address and in all (login_waiting_max)', async (t) => {
  const { client } = await startController(t, {
    // a step of 10 s: every request of the flood below is in before the first held answer goes (a loaded
    // machine may take seconds to take 24 requests, and a released answer would free a booking meanwhile)
    ini: { webapi: { x_real_ip: true, login_free_failures: 0, login_pending_max: 4, login_waiting_max: 6, login_delay: 10, login_delay_max: 10 } },
  });
  // past the free failures a wrong key is answered late: a step (10 s) after the previous booking, at most login_delay_max
  const [ra, rb] = await Promise.all([timed(client, 'late-0-0123456789abcdef', '10.2.0.1'), timed(client, 'late-1-0123456789abcdef', '10.2.0.1')]);
  t.is(ra.error?.message, 'invalid key');
  t.is(rb.error?.message, 'invalid key');
  t.true(ra.ms >= 9700 && rb.ms >= 9700, `answers after ${ra.ms.toFixed(0)} and ${rb.ms.toFixed(0)} ms`);
  // four addresses, six guesses each at once: at most 4 held per address (the rest refused unchecked), at most 6 in all
  const flood: ReturnType<typeof timed>[] = [];
  for (let ip = 1; ip <= 4; ip++) for (let i = 0; i < 6; i++) flood.push(timed(client, `flood-${ip}-${i}-0123456789abcdef`, `10.3.0.${ip}`));
  await until('six held back', async () => (await waiting(client)) === 6);
  const answers = await Promise.all(flood);
  t.is(answers.filter((r) => LOCKED.test(r.error?.message ?? '')).length, 8, 'per address: 2 of 6 past the 4 booked');
  t.is(answers.filter((r) => r.error?.message === 'invalid key').length, 16);
  t.is(await waiting(client), 0);
});

test('an IPv6 client counts by its /64; other addresses are not affected', async (t) => {
  const { client } = await startController(t, { ini: { webapi: { x_real_ip: true, login_free_failures: 3, login_pending_max: 1, login_delay: 30 } } });
  for (let i = 0; i < 3; i++) t.is((await timed(client, `wrong-${i}-0123456789abcdef`, `2001:db8:1:2::${i + 1}`)).error?.message, 'invalid key');
  hold(client, 'wrong-9-0123456789abcdef', '2001:db8:1:2::9');
  await until('one answer held back', async () => (await waiting(client)) === 1);
  t.regex((await timed(client, Keys.master, '2001:db8:1:2::ffff')).error?.message ?? '', LOCKED);
  t.is((await timed(client, Keys.master, '2001:db8:1:3::1')).error, undefined);
  t.is((await timed(client, Keys.master, '10.0.0.2')).error, undefined);
});

test('a key used outside its hosts_allow gets the answer of an unknown key, and counts as a guess', async (t) => {
  // a step of 20 s: the master key's call below comes while the booking is ahead, on a loaded machine too
  const { client } = await startController(t, { ini: { webapi: { x_real_ip: true, login_free_failures: 1, login_pending_max: 1, login_delay: 20 } } });
  const outside = '10.9.9.9';
  const unknown = await client.rpc('test', { k: 'unknownunknownunknown' }, from(outside));
  const held = timed(client, Keys.ops, outside); // ops: 127.0.0.1 and ::1 only; past the free failure: held back
  await until('one answer held back', async () => (await waiting(client)) === 1);
  t.regex((await client.rpc('test', { k: Keys.master }, from(outside))).error?.message ?? '', LOCKED);
  const known = await held;
  t.deepEqual({ code: known.error?.code, message: known.error?.message }, unknown.error);
});

test('wrong keys are logged once, then counted: one line per log_repeat_interval, never the key', async (t) => {
  const { client, dir } = await startController(t, { ini: { webapi: { x_real_ip: true, login_free_failures: 2000 }, server: { log_repeat_interval: 1 } } });
  const wrong = (i: number) => `secret-guess-${i}-0123456789abcdef`;
  const started = performance.now();
  for (let i = 0; i < 2000; i += 100) {
    await Promise.all(Array.from({ length: 100 }, (_, j) => client.rpc('test', { k: wrong(i + j) }, from(j % 2 ? '10.5.0.1' : '10.5.0.2'))));
  }
  const log = () => fs.readFileSync(path.join(dir, 'controller.log'), 'utf8');
  const counted = () => log().split('\n').filter((l) => l.includes('wrong API keys refused'));
  await until('the count logged', () => {
    const lines = counted();
    const total = lines.reduce((n, l) => n + Number(/: (\d+) more in the last 1 s/.exec(l)?.[1] ?? (/; more are counted/.test(l) ? 1 : 0)), 0);
    return total === 2000;
  });
  const lines = counted();
  const seconds = (performance.now() - started) / 1000;
  t.log(`${lines.length} lines for 2,000 wrong keys in ${seconds.toFixed(1)} s`);
  // one per interval (1 s) and the first of each window
  t.true(lines.length <= 2 * Math.ceil(seconds) + 2, `${lines.length} lines`);
  t.regex(lines.at(-1)!, /\(10\.5\.0\.\d: \d+, 10\.5\.0\.\d: \d+\)/, 'the sources with their counts');
  t.false(log().includes('secret-guess'), 'no key in the log');
});

test('set_key_prop p=key refuses a value shorter than 16 characters', async (t) => {
  const { client } = await startController(t);
  await client.ok('create_key', { ...m, i: 'k1' });
  t.is((await client.rpc('set_key_prop', { ...m, i: 'k1', p: 'key', v: 'short-value-1234'.slice(0, 15) })).error?.code, Err.invalid.code);
  t.is((await client.rpc('set_key_prop', { ...m, i: 'k1', p: 'key', v: 'short-value-1234' })).error, undefined);
  t.is((await client.ok('test', { k: 'short-value-1234' })).acl.key_id, 'k1');
  // create_key makes its own value: 64 characters
  t.regex((await client.ok('create_key', { ...m, i: 'k2' })).key, /^.{64}$/);
});
