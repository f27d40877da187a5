import test from 'ava';
import { startController, Keys, Client } from '../helpers/controller';
import { keysIni } from '../helpers/keys';
import { Err } from '../helpers/api-errors';
import { Transports, errOf, okVia, via } from '../helpers/accounts';
import { sleep, until } from '../helpers/wait';

const TOKEN = /^token:[0-9a-f]{64}$/;
const basic = (u: string, p: string) => ({ Authorization: `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}` });

/** A controller with user `op` (password `secret`) bound to the master key. */
async function withUser(t: any, ini: Record<string, Record<string, string | number | boolean>> = {}) {
  const running = await startController(t, { ini });
  await running.client.ok('create_user', { k: Keys.master, u: 'op', p: 'secret', a: 'masterkey' });
  return running;
}

for (const tr of Transports) {
  test(`login with u and p, k, a, basic authorization; logout over ${tr}`, async (t) => {
    // enough free failures that every bad login below is refused for its credentials, not by the throttle
    const { client } = await withUser(t, { webapi: { login_free_failures: 100 } });
    const byUser = await okVia(client, tr, 'login', { u: 'op', p: 'secret' });
    t.is(byUser.key, 'masterkey');
    t.is(byUser.user, 'op');
    t.regex(byUser.token, TOKEN);
    // a token works wherever a key does: parameter k, X-Auth-Key, master functions
    t.is((await okVia(client, tr, 'test', { k: byUser.token })).acl.key_id, 'masterkey');
    t.deepEqual((await okVia(client, tr, 'list_users', {}, { 'X-Auth-Key': byUser.token })), [{ key_id: 'masterkey', user: 'op' }]);

    const byKey = await okVia(client, tr, 'login', { k: Keys.ops });
    t.is(byKey.key, 'ops');
    t.false('user' in byKey);
    t.regex(byKey.token, TOKEN);
    t.not(byKey.token, byUser.token);

    t.deepEqual(await okVia(client, tr, 'login', { a: byUser.token }), { ...byUser, mode: 'normal' }, 'a token check returns its information');
    t.deepEqual(await okVia(client, tr, 'login', { k: byKey.token }), { ...byKey, mode: 'normal' }, 'so does a token given as k');
    const byBasic = await okVia(client, tr, 'login', {}, basic('op', 'secret'));
    t.like(byBasic, { key: 'masterkey', user: 'op' });
    t.regex(byBasic.token, TOKEN);

    for (const bad of [{ u: 'op', p: 'wrong' }, { u: 'nobody', p: 'secret' }, { u: 'op' }, { a: 'token:' + '0'.repeat(64) }, { a: Keys.ops }]) {
      const r = await via(client, tr, 'login', bad);
      t.is(r.error, errOf(tr, Err.denied), JSON.stringify(bad));
      t.regex(r.message!, /invalid credentials/);
    }
    t.regex((await via(client, tr, 'login', {})).message!, /login needs/);
    t.regex((await via(client, tr, 'login', {}, basic('op', 'wrong'))).message!, /invalid credentials/);
    t.regex((await via(client, tr, 'login', {}, { Authorization: 'Basic !!!' })).message!, /login needs/);
    t.is((await via(client, tr, 'login', { k: 'no-such-key' })).error, errOf(tr, Err.denied));

    await okVia(client, tr, 'logout', { k: byUser.token });
    t.is((await via(client, tr, 'test', { k: byUser.token })).error, errOf(tr, Err.denied), 'logout ends the token');
    t.is((await via(client, tr, 'login', { a: byUser.token })).error, errOf(tr, Err.denied));
    t.is((await okVia(client, tr, 'test', { k: byKey.token })).acl.key_id, 'ops', 'other tokens live on');
    t.is((await via(client, tr, 'logout', { k: Keys.ops })).error, errOf(tr, Err.denied), 'logout needs a token');
    t.is((await via(client, tr, 'logout', {})).error, errOf(tr, Err.denied));
  });
}

test('login refuses a key or user whose key is not allowed from the caller', async (t) => {
  const { client } = await withUser(t);
  const m = { k: Keys.master };
  await client.ok('create_key', { ...m, i: 'far' });
  await client.ok('set_key_prop', { ...m, i: 'far', p: 'hosts_allow', v: '10.0.0.0/8' });
  await client.ok('create_user', { ...m, u: 'faraway', p: 'pw', a: 'far' });
  t.is((await client.rpc('login', { u: 'faraway', p: 'pw' })).error?.code, 2);
});

test('a key given by hosts_assign logs in without credentials; basic authorization comes first', async (t) => {
  const { client } = await startController(t, { keysIni: keysIni({
    masterkey: { key: Keys.master, master: true, hosts_allow: '127.0.0.1' },
    local: { key: Keys.plain, hosts_allow: '127.0.0.1', hosts_assign: '127.0.0.1' },
  }) });
  await client.ok('create_user', { k: Keys.master, u: 'op', p: 'secret', a: 'masterkey' });
  t.is((await client.ok('login', {})).key, 'local');
  t.like(await okVia(client, 'jrpc', 'login', {}, basic('op', 'secret')), { key: 'masterkey', user: 'op' });
});

test('tokens expire after session_timeout of idleness; use prolongs them', async (t) => {
  // 4 s: a use every 0.5 s keeps it with 3.5 s to spare for a stall of a loaded machine
  const { client } = await withUser(t, { webapi: { session_timeout: 4 } });
  const { token } = await client.ok('login', { u: 'op', p: 'secret' });
  for (let i = 0; i < 10; i++) {
    await sleep(500);
    t.is((await client.ok('test', { k: token })).acl.key_id, 'masterkey', 'in use: still valid after 5 s');
  }
  await sleep(4600);
  t.is((await client.rpc('test', { k: token })).error?.code, 2, 'idle longer than session_timeout: ended');
});

test('with session_no_prolong a token ends session_timeout after login, used or not', async (t) => {
  const { client } = await withUser(t, { webapi: { session_timeout: 2, session_no_prolong: true } });
  const { token } = await client.ok('login', { u: 'op', p: 'secret' });
  let ended = false;
  for (let i = 0; i < 12 && !ended; i++) {
    await sleep(500);
    ended = (await client.rpc('test', { k: token })).error?.code === 2;
  }
  t.true(ended, 'ended although used every 0.5 s');
});

test('session_timeout 0 disables tokens: login checks credentials and gives none', async (t) => {
  const { client } = await withUser(t, { webapi: { session_timeout: 0 } });
  t.deepEqual(await client.ok('login', { u: 'op', p: 'secret' }), { key: 'masterkey', user: 'op' });
  t.is((await client.rpc('login', { u: 'op', p: 'bad' })).error?.code, 2);
});

test('a restart ends every token', async (t) => {
  const first = await withUser(t);
  const { token } = await first.client.ok('login', { u: 'op', p: 'secret' });
  await first.stop();
  const second = await startController(t, { dir: first.dir });
  t.is((await second.client.rpc('test', { k: token })).error?.code, 2);
  t.regex((await second.client.ok('login', { u: 'op', p: 'secret' })).token, TOKEN);
});

test('at max_tokens the oldest token ends', async (t) => {
  const { client } = await withUser(t, { webapi: { max_tokens: 3 } });
  const tokens: string[] = [];
  for (let i = 0; i < 5; i++) tokens.push((await client.ok('login', { k: Keys.ops })).token);
  const alive = [];
  for (const tok of tokens) alive.push(!(await client.rpc('test', { k: tok })).error);
  t.deepEqual(alive, [false, false, true, true, true]);
});

/** A client that claims an address through X-Real-IP (the controller trusts it: x_real_ip = yes). */
function from(client: Client, ip: string) {
  return (params: Record<string, unknown>) => via(client, 'jrpc', 'login', params, { 'X-Real-IP': ip });
}

/** Wrong login answers held back now (the tarpit). */
async function held(client: Client): Promise<number> {
  const r = await fetch(`${client.url}/metrics`, { headers: { 'X-Auth-Key': Keys.master } });
  return Number(/^eva_login_waiting (\d+)$/m.exec(await r.text())?.[1]);
}

// the guessing tests fill the process-wide password queue (16): run alone, so the other tests' logins are not refused busy
test.serial('failed logins are slowed per address: the right password passes until too many guesses are booked, other addresses are not', async (t) => {
  const { client } = await withUser(t, { webapi: { x_real_ip: true, login_free_failures: 5, login_pending_max: 3, login_delay: 60 } });
  const attacker = from(client, '10.6.6.6');
  for (let i = 0; i < 5; i++) t.regex((await attacker({ u: 'op', p: `guess${i}` })).message!, /invalid credentials/);
  // past the free failures: the answers are held back (a minute and more); not awaited
  const late = [attacker({ u: 'op', p: 'guess5' }), attacker({ u: 'op', p: 'guess6' })];
  await until('two answers held back', async () => (await held(client)) === 2);
  t.is((await attacker({ u: 'op', p: 'secret' })).result?.user, 'op', 'the right password passes at once');
  // the same wrong password again says nothing new: answered at once, not counted
  t.regex((await attacker({ u: 'op', p: 'guess0' })).message!, /invalid credentials/);
  late.push(attacker({ u: 'op', p: 'guess7' }));
  await until('three answers held back', async () => (await held(client)) === 3);
  for (let i = 8; i < 50; i++) {
    const r = await attacker({ u: 'op', p: `guess${i}` });
    t.is(r.error, 2);
    t.regex(r.message!, /too many failed logins.*retry in \d+ s/);
  }
  const right = await attacker({ u: 'op', p: 'secret' });
  t.is(right.error, 2, 'with login_pending_max guesses booked even the right password is refused unchecked');
  t.regex(right.message!, /too many failed logins/);
  const elsewhere = await from(client, '10.7.7.7')({ u: 'op', p: 'secret' });
  t.is(elsewhere.result?.user, 'op', 'a client at another address logs in');
  for (const l of late) void l.catch(() => undefined);
});

test.serial('an IPv6 client is slowed by its /64: a host cannot take a fresh address for each guess', async (t) => {
  const { client } = await withUser(t, { webapi: { x_real_ip: true, login_free_failures: 5, login_pending_max: 1, login_delay: 60, login_waiting_max: 1 } });
  const checked: string[] = [];
  for (let i = 1; i <= 5; i++) t.regex((await from(client, `2001:db8:1:2::${i.toString(16)}`)({ u: 'op', p: `guess${i}` })).message!, /invalid credentials/);
  const late = from(client, '2001:db8:1:2::99')({ u: 'op', p: 'guess99' }); // the 6th: booked, held back
  await until('one answer held back', async () => (await held(client)) === 1);
  for (let i = 6; i <= 20; i++) {
    const r = await from(client, `2001:db8:1:2::${i.toString(16)}`)({ u: 'op', p: `guess${i}` });
    t.is(r.error, 2);
    if (/invalid credentials/.test(r.message!)) checked.push(String(i));
  }
  t.deepEqual(checked, [], 'past the free failures and the booked one, nothing was checked');
  // other spellings of addresses in the same /64 are the same client
  t.regex((await from(client, '2001:0db8:0001:0002:ffff:0:0:1')({ u: 'op', p: 'secret' })).message!, /too many failed logins/);
  const neighbour = await from(client, '2001:db8:1:3::1')({ u: 'op', p: 'secret' });
  t.is(neighbour.result?.user, 'op', 'the next /64 is another client');
  void late.catch(() => undefined);
});

test.serial('a wrong login past the free failures is answered late; the steps double', async (t) => {
  const { client } = await withUser(t, { webapi: { x_real_ip: true, login_free_failures: 1, login_pending_max: 2, login_delay: 10 } });
  // a step of 10 s: both guesses stay held back together long enough to be seen even when each password check is slow
  // (a CPU hog), and the third guess below comes while both are booked
  const attacker = from(client, '10.6.6.7');
  t.regex((await attacker({ u: 'op', p: 'bad0' })).message!, /invalid credentials/);
  const t0 = performance.now();
  const first = attacker({ u: 'op', p: 'bad1' }).then((r) => ({ r, ms: performance.now() - t0 }));
  const second = attacker({ u: 'op', p: 'bad2' }).then((r) => ({ r, ms: performance.now() - t0 }));
  await until('two answers held back', async () => (await held(client)) === 2);
  // both booked: the third guess waits for the first booking (up to 10 s), in words
  t.regex((await attacker({ u: 'op', p: 'bad3' })).message!, /too many failed logins from this address, retry in ([1-9]|10) s/);
  const [a, b] = await Promise.all([first, second]);
  t.regex(a.r.message!, /invalid credentials/);
  t.regex(b.r.message!, /invalid credentials/);
  // the first a step (10 s) after, the second a doubled step (20 s) after that
  t.true(a.ms >= 9500, `first after ${a.ms.toFixed(0)} ms`);
  t.true(b.ms >= 29000, `second after ${b.ms.toFixed(0)} ms`);
  t.is((await attacker({ u: 'op', p: 'secret' })).result?.user, 'op', 'nothing booked now: the right password passes');
});

test.serial('parallel guesses cannot all start before the first fails', async (t) => {
  const { client } = await withUser(t, { webapi: { x_real_ip: true, login_free_failures: 5, login_pending_max: 2, login_delay: 60 } });
  const attacker = from(client, '10.6.6.8');
  const answers: { error?: number; message?: string }[] = [];
  const all = Array.from({ length: 40 }, (_, i) => attacker({ u: 'op', p: `guess${i}` }).then((a) => answers.push(a)));
  // the two booked ones are held back a minute and more
  await until('the others answered', () => answers.length >= 38, 60_000);
  // 2: refused; 13: refused busy by the bounded hashing queue, which a loaded machine fills first
  t.deepEqual(answers.filter((a) => a.error !== 2 && a.error !== 13).map((a) => `${a.error}: ${a.message}`), [], 'every guess is refused');
  const checked = answers.filter((a) => /invalid credentials/.test(a.message!)).length;
  t.true(checked <= 5, `${checked} guesses were answered as checked`);
  t.true((await held(client)) <= 2, 'at most login_pending_max held back');
  for (const p of all) void p.catch(() => undefined);
});

// serial: password checks are bounded process-wide, and the other tests' floods would answer this one busy (13)
test.serial('remembered addresses are bounded: at login_clients_max the oldest is forgotten', async (t) => {
  // no free failure and one booking: a wrong login books it (answered in a minute: not awaited), the address is then refused unchecked
  const { client } = await withUser(t, { webapi: { x_real_ip: true, login_free_failures: 0, login_pending_max: 1, login_delay: 60, login_clients_max: 2 } });
  const bad = (ip: string) => { void from(client, ip)({ u: 'op', p: 'bad' }).catch(() => undefined); };
  bad('10.0.0.1');
  await until('10.0.0.1 booked', async () => (await held(client)) === 1);
  t.regex((await from(client, '10.0.0.1')({ u: 'op', p: 'secret' })).message!, /too many/);
  bad('10.0.0.2');
  await until('10.0.0.2 booked', async () => (await held(client)) === 2);
  bad('10.0.0.3'); // a third address: 10.0.0.1 is forgotten
  await until('10.0.0.3 booked', async () => (await held(client)) === 3);
  t.is((await from(client, '10.0.0.1')({ u: 'op', p: 'secret' })).result?.user, 'op');
  t.regex((await from(client, '10.0.0.3')({ u: 'op', p: 'secret' })).message!, /too many/, 'the newest are still remembered');
});
