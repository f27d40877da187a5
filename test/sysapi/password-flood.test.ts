import test from 'ava';
import { hashPassword, PasswordDefaults } from '../../plugins/sysapi/passwords';
import { ApiError } from '../../core/errors';
import { makeDir, spawnController, Keys } from '../helpers/controller';

test.serial('password hashing: one at a time and 16 waiting; the rest is refused at once with busy (13)', async (t) => {
  const n = PasswordDefaults.running + PasswordDefaults.queued + 20;
  const started = Date.now();
  const settled = await Promise.allSettled(Array.from({ length: n }, () => hashPassword('pw').then((h) => ({ h, at: Date.now() - started }))));
  const refused = settled.filter((s) => s.status === 'rejected');
  t.is(refused.length, 20);
  for (const r of refused) t.true((r as PromiseRejectedResult).reason instanceof ApiError && (r as PromiseRejectedResult).reason.code === 13);
  t.is(settled.filter((s) => s.status === 'fulfilled').length, PasswordDefaults.running + PasswordDefaults.queued);
  // the turns were given back: a later hash runs
  t.regex(await hashPassword('again'), /^\$scrypt\$/);
});

/** The p-th percentile of a list of numbers. */
const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];

test.serial('set_cvar keeps its latency (p99 under 250 ms, or 5 times its own before) during a login flood from 500 addresses', async (t) => {
  const dir = makeDir(t, { ini: { webapi: { x_real_ip: true } } });
  const child = await spawnController(t, dir);
  const c = child.client;
  await c.ok('create_user', { k: Keys.master, u: 'alice', p: 'right', a: 'ops' });
  const measure = async () => {
    const times: number[] = [];
    for (let i = 0; i < 100; i++) {
      const t0 = performance.now();
      const r = await c.rpc('set_cvar', { k: Keys.master, i: 'x', v: String(i) });
      times.push(performance.now() - t0);
      if (r.error) t.fail(JSON.stringify(r.error));
    }
    return times;
  };
  const quiet = percentile(await measure(), 0.99);
  let flooding = true;
  let logins = 0;
  // 25 clients at once, each a login every 20 ms or as soon as its last one is answered
  const flood = Array.from({ length: 25 }, async (_, w) => {
    for (let i = 0; flooding; i++) {
      const a = w * 20 + (i % 20); // 500 addresses
      await Promise.all([
        c.rpc('login', { u: 'alice', p: `wrong${i}` }, { 'X-Real-IP': `10.1.${a >> 8}.${a & 255}` }).catch(() => undefined),
        new Promise((r) => setTimeout(r, 20)),
      ]);
      logins++;
    }
  });
  await new Promise((r) => setTimeout(r, 500));
  // 250 ms, or five times the p99 measured before the flood (without the
  // bound the writes waited for seconds). Other work on a shared machine
  // can stall any one round, so up to five rounds are measured during the
  // flood: one within the limit is enough; the unbounded hashing missed it
  // in every round by far. (100 ms and three rounds failed once beside two
  // other CI runs, load average over 10.)
  const limit = Math.max(250, 5 * quiet);
  const rounds: number[] = [];
  let p99 = Infinity;
  for (let round = 0; round < 5 && p99 >= limit; round++) {
    const times = await measure();
    p99 = percentile(times, 0.99);
    rounds.push(p99);
  }
  flooding = false;
  await Promise.all(flood);
  t.log(`set_cvar p99 quiet: ${quiet.toFixed(1)} ms; during ${logins} logins: p99 of each round ${rounds.map((x) => x.toFixed(1)).join(', ')} ms`);
  t.true(p99 < limit, `p99 ${p99.toFixed(1)} ms, limit ${limit.toFixed(0)} ms`);
});
