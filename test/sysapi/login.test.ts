import test from 'ava';
import { startController, Keys, Client } from '../helpers/controller';
import { Err } from './expect';
import { Transports, errOf, okVia, via } from './accounts-helpers';
import { sleep } from '../helpers/wait';

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

    t.deepEqual(await okVia(client, tr, 'login', { a: byUser.token }), byUser, 'a token check returns its information');
    t.deepEqual(await okVia(client, tr, 'login', { k: byKey.token }), byKey, 'so does a token given as k');
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
  const keysIni = `
[masterkey]
key = ${Keys.master}
master = yes
hosts_allow = 127.0.0.1

[local]
key = ${Keys.plain}
hosts_allow = 127.0.0.1
hosts_assign = 127.0.0.1
`;
  const { client } = await startController(t, { keysIni });
  await client.ok('create_user', { k: Keys.master, u: 'op', p: 'secret', a: 'masterkey' });
  t.is((await client.ok('login', {})).key, 'local');
  t.like(await okVia(client, 'jrpc', 'login', {}, basic('op', 'secret')), { key: 'masterkey', user: 'op' });
});

test('tokens expire after session_timeout of idleness; use prolongs them', async (t) => {
  const { client } = await withUser(t, { webapi: { session_timeout: 2 } });
  const { token } = await client.ok('login', { u: 'op', p: 'secret' });
  for (let i = 0; i < 6; i++) {
    await sleep(500);
    t.is((await client.ok('test', { k: token })).acl.key_id, 'masterkey', 'in use: still valid after 3 s');
  }
  await sleep(2600);
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

test('failed logins are slowed per address: guessing is refused, other addresses are not', async (t) => {
  const { client } = await withUser(t, { webapi: { x_real_ip: true, login_free_failures: 5, login_delay: 60 } });
  const attacker = from(client, '10.6.6.6');
  for (let i = 0; i < 5; i++) t.regex((await attacker({ u: 'op', p: `guess${i}` })).message!, /invalid credentials/);
  for (let i = 5; i < 50; i++) {
    const r = await attacker({ u: 'op', p: `guess${i}` });
    t.is(r.error, 2);
    t.regex(r.message!, /too many failed logins.*retry in \d+ s/);
  }
  const right = await attacker({ u: 'op', p: 'secret' });
  t.is(right.error, 2, 'even the right password is refused while the address waits');
  t.regex(right.message!, /too many failed logins/);
  const elsewhere = await from(client, '10.7.7.7')({ u: 'op', p: 'secret' });
  t.is(elsewhere.result?.user, 'op', 'a client at another address logs in');
});

test('an IPv6 client is slowed by its /64: a host cannot take a fresh address for each guess', async (t) => {
  const { client } = await withUser(t, { webapi: { x_real_ip: true, login_free_failures: 5, login_delay: 60 } });
  const checked: string[] = [];
  for (let i = 1; i <= 20; i++) {
    const r = await from(client, `2001:db8:1:2::${i.toString(16)}`)({ u: 'op', p: `guess${i}` });
    t.is(r.error, 2);
    if (/invalid credentials/.test(r.message!)) checked.push(String(i));
  }
  t.is(checked.length, 5, 'only the free failures were checked');
  // other spellings of addresses in the same /64 are the same client
  t.regex((await from(client, '2001:0db8:0001:0002:ffff:0:0:1')({ u: 'op', p: 'secret' })).message!, /too many failed logins/);
  const neighbour = await from(client, '2001:db8:1:3::1')({ u: 'op', p: 'secret' });
  t.is(neighbour.result?.user, 'op', 'the next /64 is another client');
});

test('the wait doubles with each further failure', async (t) => {
  const { client } = await withUser(t, { webapi: { x_real_ip: true, login_free_failures: 2, login_delay: 1 } });
  const attacker = from(client, '10.6.6.7');
  for (let i = 0; i < 2; i++) t.regex((await attacker({ u: 'op', p: 'bad' })).message!, /invalid credentials/);
  t.regex((await attacker({ u: 'op', p: 'bad' })).message!, /retry in 1 s/);
  await sleep(1200);
  t.regex((await attacker({ u: 'op', p: 'bad' })).message!, /invalid credentials/, 'after the wait, one more try');
  t.regex((await attacker({ u: 'op', p: 'bad' })).message!, /retry in 2 s/);
});

test('parallel guesses cannot all start before the first fails', async (t) => {
  const { client } = await withUser(t, { webapi: { x_real_ip: true, login_free_failures: 5, login_delay: 60 } });
  const attacker = from(client, '10.6.6.8');
  const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => attacker({ u: 'op', p: `guess${i}` })));
  // 2: refused; 13: refused busy by the bounded hashing queue, which a loaded machine fills first
  t.deepEqual(answers.filter((a) => a.error !== 2 && a.error !== 13).map((a) => `${a.error}: ${a.message}`), [], 'every guess is refused');
  const checked = answers.filter((a) => /invalid credentials/.test(a.message!)).length;
  t.true(checked <= 5, `${checked} guesses were checked`);
});

test('remembered addresses are bounded: at login_clients_max the oldest is forgotten', async (t) => {
  const { client } = await withUser(t, { webapi: { x_real_ip: true, login_free_failures: 1, login_delay: 60, login_clients_max: 2 } });
  await from(client, '10.0.0.1')({ u: 'op', p: 'bad' });
  t.regex((await from(client, '10.0.0.1')({ u: 'op', p: 'secret' })).message!, /too many/);
  await from(client, '10.0.0.2')({ u: 'op', p: 'bad' });
  await from(client, '10.0.0.3')({ u: 'op', p: 'bad' }); // a third address: 10.0.0.1 is forgotten
  t.is((await from(client, '10.0.0.1')({ u: 'op', p: 'secret' })).result?.user, 'op');
  t.regex((await from(client, '10.0.0.3')({ u: 'op', p: 'secret' })).message!, /too many/, 'the newest are still remembered');
});
