import path from 'node:path';
import test from 'ava';
import { Controller } from '../../core/controller';
import { EXPIRED_REMEMBERED, TokenStore } from '../../core/auth/tokens';
import { ConfigError } from '../../core/settings/schema';
import { startController, makeDir, Keys } from '../helpers/controller';
import { keysIni } from '../helpers/keys';
import { Err } from '../helpers/api-errors';
import { Transports, errOf, okVia, via, pySqlite, userDbOf } from '../helpers/accounts';
import { runMain } from '../helpers/cli';
import { sleep, until } from '../helpers/wait';
import { TestStream, startStreamController } from '../helpers/stream-client';

/*
 * Keys and tokens that expire. Time is real here: expiries are 2 s ahead
 * and waited for by polling (until), with deadlines far beyond them; no
 * test asserts how soon something happened, only that it did and what it said.
 */

const m = { k: Keys.master };
/** Unix seconds `s` from now. */
const inSeconds = (s: number) => Date.now() / 1000 + s;
const STATE = [{ subject: 'state', types: ['#'], groups: ['#'] }];

for (const tr of Transports) {
  test(`create_key with expires: shown by list_key_props and list_keys, refused past it as expired (2 / 403) over ${tr}`, async (t) => {
    const { client } = await startController(t);
    // a key that expires far ahead: its fields
    const far = await okVia(client, tr, 'create_key', { ...m, i: 'far', expires: '2100-01-01T00:00:00Z' });
    t.like(far, { id: 'far', expires: 4102444800, expired: false });
    t.like(await okVia(client, tr, 'list_key_props', { ...m, i: 'far' }), { expires: 4102444800, expired: false });
    const listed = (id: string) => okVia(client, tr, 'list_keys', m).then((l: any[]) => l.find((k) => k.key_id === id));
    t.like(await listed('far'), { expires: 4102444800, expired: false });
    t.is((await okVia(client, tr, 'test', { k: far.key })).acl.key_id, 'far');
    // keys without an expiry answer as EVA ICS 3.3 did: no such fields
    t.false('expires' in await listed('ops'));
    // one that expires soon (15 s: room for the two calls that need it alive on a loaded machine)
    const expires = inSeconds(15);
    const created = await okVia(client, tr, 'create_key', { ...m, i: 'k1', expires });
    t.is(created.expires, expires);
    const { token } = await okVia(client, tr, 'login', { k: created.key });
    const refused = await until('the key to expire', async () => {
      const r = await via(client, tr, 'test', { k: created.key });
      return 'error' in r && r;
    }, 60_000);
    t.is(refused.error, errOf(tr, Err.denied));
    t.regex(refused.message!, /^API key expired at \d{4}-\d\d-\d\dT/);
    // a token made from it is refused too, saying why
    const byToken = await via(client, tr, 'test', { k: token });
    t.is(byToken.error, errOf(tr, Err.denied));
    t.regex(byToken.message!, /API key of this token expired/);
    t.like(await listed('k1'), { expires, expired: true });
    t.like(await okVia(client, tr, 'list_key_props', { ...m, i: 'k1' }), { expired: true });
    // a new login with it is refused (the key itself is checked first)
    t.regex((await via(client, tr, 'login', { k: created.key })).message!, /expired/);
  });

  test(`set_key_prop expires: ISO 8601 or Unix seconds, cleared by an empty value; bad values are 11 / 400 over ${tr}`, async (t) => {
    const { client } = await startController(t);
    const { key } = await okVia(client, tr, 'create_key', { ...m, i: 'k2' });
    const set = (v: unknown) => via(client, tr, 'set_key_prop', { ...m, i: 'k2', p: 'expires', v });
    const iso = new Date(Math.ceil(inSeconds(2)) * 1000).toISOString();
    t.false('error' in await set(iso));
    t.is((await okVia(client, tr, 'list_key_props', { ...m, i: 'k2' })).expires, Date.parse(iso) / 1000);
    await until('the key to expire', async () => 'error' in await via(client, tr, 'test', { k: key }));
    t.true((await okVia(client, tr, 'list_key_props', { ...m, i: 'k2' })).expired);
    // cleared: the key lives again, for ever
    t.false('error' in await set(''));
    t.false('expires' in await okVia(client, tr, 'list_key_props', { ...m, i: 'k2' }));
    t.is((await okVia(client, tr, 'test', { k: key })).acl.key_id, 'k2');
    // Unix seconds as digits (a query string's) and a date alone (midnight, local time)
    t.false('error' in await set('4102444800'));
    t.is((await okVia(client, tr, 'list_key_props', { ...m, i: 'k2' })).expires, 4102444800);
    t.false('error' in await set('2100-01-02'));
    t.is((await okVia(client, tr, 'list_key_props', { ...m, i: 'k2' })).expires, new Date(2100, 0, 2).getTime() / 1000);
    for (const bad of ['tomorrow', '-5', -5, 0, '2026-13-45', '1e20', 1e15, '2026-01-01T25:00:00Z', 'Infinity', true]) {
      const r = await set(bad);
      t.is(r.error, errOf(tr, Err.invalid), String(bad));
      t.regex(r.message ?? '', /expires: .* is not a time/, String(bad));
    }
    t.is((await okVia(client, tr, 'list_key_props', { ...m, i: 'k2' })).expires, new Date(2100, 0, 2).getTime() / 1000, 'a refused value changes nothing');
    const r = await via(client, tr, 'create_key', { ...m, i: 'k3', expires: 'next week' });
    t.is(r.error, errOf(tr, Err.invalid));
    t.is((await via(client, tr, 'list_key_props', { ...m, i: 'k3' })).error, errOf(tr, Err.notFound), 'a refused create_key leaves no key');
  });
}

test('an expired key is not counted as a wrong guess: its answer is not held, a client still sending it locks no one out', async (t) => {
  // no free failures: a counted guess would be answered only after login_delay (120 s), and book the address
  const { client } = await startController(t, { ini: { webapi: { login_free_failures: 0, login_pending_max: 1, login_delay: 120 } } });
  const a = await client.ok('create_key', { ...m, i: 'a', expires: inSeconds(2) });
  const b = await client.ok('create_key', { ...m, i: 'b', expires: inSeconds(2) });
  await until('both keys to expire', async () => (await client.ok('list_keys', m)).filter((k: any) => k.expired).length === 2);
  for (const k of [a.key, b.key, a.key]) {
    // a margin of a quarter of the hold: the answer comes at once or after 120 s, nothing between
    const r = await Promise.race([client.rpc('test', { k }), sleep(30_000).then(() => undefined)]);
    t.truthy(r, 'answered, not held as a wrong guess');
    t.regex(r!.error!.message, /^API key expired/);
  }
  t.is((await client.ok('test', { k: Keys.ops })).acl.key_id, 'ops');
});

test('a user whose key expired: login with the right password says the key expired; a wrong one says nothing more', async (t) => {
  const { client } = await startController(t);
  await client.ok('create_key', { ...m, i: 'uk' });
  await client.ok('create_user', { ...m, u: 'ann', p: 'a-long-password-1', a: 'uk' });
  t.truthy((await client.ok('login', { u: 'ann', p: 'a-long-password-1' })).token);
  // a time past is taken: the key is expired at once (a way to stop one now)
  await client.ok('set_key_prop', { ...m, i: 'uk', p: 'expires', v: '2020-01-01T00:00:00Z' });
  t.like(await client.ok('list_key_props', { ...m, i: 'uk' }), { expires: 1577836800, expired: true });
  const right = await client.rpc('login', { u: 'ann', p: 'a-long-password-1' });
  t.is(right.error?.code, 2);
  t.regex(right.error!.message, /API key of this account expired/);
  t.is((await client.rpc('login', { u: 'ann', p: 'wrong-password-123' })).error?.message, 'invalid credentials');
});

test('static keys: expires in the key file (Unix seconds or ISO 8601) works as for dynamic keys', async (t) => {
  const soon = Math.ceil(inSeconds(2));
  const keys = keysIni({
    masterkey: { key: Keys.master, master: true, hosts_allow: ['0.0.0.0/0', '::/0'] },
    soon: { key: Keys.ops, groups: '#', hosts_allow: '127.0.0.1', expires: soon },
    later: { key: Keys.plain, hosts_allow: '127.0.0.1', expires: '2100-01-01T00:00:00Z' },
  });
  const { client } = await startController(t, { keysIni: keys });
  const list = await client.ok('list_keys', m);
  t.is(list.find((k: any) => k.key_id === 'soon').expires, soon);
  t.like(list.find((k: any) => k.key_id === 'later'), { expires: Date.parse('2100-01-01T00:00:00Z') / 1000, expired: false });
  t.false('expires' in list.find((k: any) => k.key_id === 'masterkey'));
  const refused = await until('the static key to expire', async () => (await client.rpc('test', { k: Keys.ops })).error);
  t.is(refused.code, 2);
  t.regex(refused.message, /^API key expired at /);
  t.is((await client.ok('test', { k: Keys.plain })).acl.key_id, 'later');
  // a static key cannot be changed through the API, its expiry neither
  t.is((await client.rpc('set_key_prop', { ...m, i: 'soon', p: 'expires', v: '' })).error?.code, 10);
});

test('key file: an expires that is no time stops the start and --check-config with file:line, exit 3', async (t) => {
  const keys = `[masterkey]\nkey = ${Keys.master}\nmaster = yes\n\n[ops]\nkey = ${Keys.ops}\nexpires = next tuesday\n`;
  const dir = makeDir(t, { keysIni: keys });
  const file = path.join(dir, 'etc', 'uc_apikeys.ini');
  const check = await runMain(t, ['--dir', dir, '--check-config']);
  t.is(check.code, 3);
  t.true(check.err.includes(`${file}:7: error: key [ops] expires: "next tuesday" is not a time`), check.err);
  const start = await runMain(t, ['--dir', dir]);
  t.is(start.code, 3);
  t.true(start.err.includes(`${file}:7: error:`), start.err);
  const err = await Controller.start({ dir, product: 'uc' }).then(() => undefined, (e: unknown) => e);
  t.true(err instanceof ConfigError);
});

test('a stream opened with a key closes when the key expires (4001, saying so), well before the ping round', async (t) => {
  const { url, client } = await startStreamController(t, { webapi: { ws_ping_interval: 600 } });
  // 15 s: the stream is open and authenticated before it, on a loaded machine too
  const { key } = await client.ok('create_key', { ...m, i: 's1', expires: inSeconds(15) });
  await client.ok('set_key_prop', { ...m, i: 's1', p: 'groups', v: '#' });
  const s = await TestStream.open(t, url, key, STATE);
  const other = await TestStream.open(t, url, Keys.master, STATE);
  const closed = await Promise.race([s.closed, sleep(60_000).then(() => undefined)]);
  t.truthy(closed, 'closed long before the 600 s ping round');
  t.is(closed!.code, 4001);
  t.true(s.messages.some((x) => x.s === 'error' && x.code === 2 && /^API key expired/.test(x.message)), JSON.stringify(s.messages));
  t.is(other.ws.readyState, other.ws.OPEN, 'another key\'s stream goes on');
  // and it cannot be opened again
  await t.throwsAsync(TestStream.open(t, url, key, STATE), { message: /expired/ });
});

test('session_max_lifetime: a token in constant use ends that long after login, saying it expired; 0 keeps them', async (t) => {
  const { client } = await startController(t, { ini: { webapi: { session_max_lifetime: 2 } } });
  const { token } = await client.ok('login', m);
  const refused = await until('the token to reach its lifetime', async () => (await client.rpc('test', { k: token })).error);
  t.is(refused.code, 2);
  t.is(refused.message, 'token expired');
  // said again on the next use (the ended token is remembered), not counted as a guess
  t.is((await client.rpc('test', { k: token })).error?.message, 'token expired');
  const direct = await client.post('test', { k: token });
  t.is(direct.status, 403);
  t.is(direct.body._error, 'token expired');

  const none = await startController(t);
  const kept = (await none.client.ok('login', m)).token;
  // a span of use longer than the other controller's lifetime (a span of time, not a wait for an event)
  for (const end = Date.now() + 3500; Date.now() < end;) {
    t.is((await none.client.ok('test', { k: kept })).acl.key_id, 'masterkey');
    await sleep(250);
  }
  t.is((await none.client.ok('test', { k: kept })).acl.key_id, 'masterkey', 'no lifetime by default');
});

test('session_max_lifetime: a stream opened with a token closes at the ping round past its lifetime', async (t) => {
  // a ping round each second: a round of 0.3 s judged the test's own client (in this process) gone on a loaded machine (1006);
  // a lifetime of 10 s: the login, the connection and its authentication come well before it
  const { url, client } = await startStreamController(t, { webapi: { session_max_lifetime: 10, ws_ping_interval: 1 } });
  const { token } = await client.ok('login', m);
  const s = await TestStream.open(t, url, token, STATE);
  const closed = await Promise.race([s.closed, sleep(60_000).then(() => undefined)]);
  t.is(closed?.code, 4001);
  t.true(s.messages.some((x) => x.s === 'error' && /^token ended \(expired/.test(x.message)), JSON.stringify(s.messages));
});

test('a dynamic key\'s expiry is kept across a restart, in a table of its own beside 3.3\'s apikeys', async (t) => {
  const first = await startController(t);
  const expires = 4102444800.5;
  await first.client.ok('create_key', { ...m, i: 'kept', expires });
  await first.client.ok('create_key', { ...m, i: 'forever' });
  await first.stop();
  const db = userDbOf(first.dir);
  t.false(pySqlite(db, 'PRAGMA table_info(apikeys)').some((c) => c.name === 'expires'), 'apikeys keeps 3.3\'s columns');
  t.deepEqual(pySqlite(db, 'SELECT k_id, expires FROM eva_key_expires'), [{ k_id: 'kept', expires }]);
  const again = await startController(t, { dir: first.dir });
  t.like(await again.client.ok('list_key_props', { ...m, i: 'kept' }), { expires, expired: false });
  t.false('expires' in await again.client.ok('list_key_props', { ...m, i: 'forever' }));
  // cleared and destroyed: its row goes
  await again.client.ok('set_key_prop', { ...m, i: 'kept', p: 'expires', v: '' });
  await again.stop();
  t.deepEqual(pySqlite(db, 'SELECT k_id FROM eva_key_expires'), []);
});

test(`tokens ended by time are remembered as such up to EXPIRED_REMEMBERED (${EXPIRED_REMEMBERED}), the oldest forgotten first`, async (t) => {
  const { ctl, client } = await startController(t, { ini: { webapi: { session_max_lifetime: 1 } } });
  const tokens = ctl.get(TokenStore);
  const made: string[] = [];
  for (let i = 0; i <= EXPIRED_REMEMBERED; i++) made.push(await tokens.create('masterkey'));
  await until('the tokens to pass their lifetime', () => tokens.expiredOrHeld(made.at(-1)!)?.expired);
  tokens.purge();
  t.is(tokens.size, 0);
  t.is(tokens.expiredOrHeld(made[0]), undefined, 'the oldest made room');
  t.deepEqual(tokens.expiredOrHeld(made[1]), { keyId: 'masterkey', expired: true });
  t.is((await client.rpc('test', { k: made[0] })).error?.message, 'invalid key');
  t.is((await client.rpc('test', { k: made.at(-1) })).error?.message, 'token expired');
});

test('an expired key is said to be expired only from where its hosts_allow lets it in; elsewhere it is any wrong value', async (t) => {
  const keys = keysIni({
    masterkey: { key: Keys.master, master: true, hosts_allow: ['0.0.0.0/0', '::/0'] },
    local: { key: Keys.ops, hosts_allow: '127.0.0.1', expires: '2020-01-01T00:00:00Z' },
  });
  const { client } = await startController(t, { keysIni: keys, ini: { webapi: { x_real_ip: true } } });
  t.is((await client.rpc('test', { k: Keys.ops })).error?.message, 'API key expired at 2020-01-01T00:00:00Z');
  const elsewhere = await client.rpc('test', { k: Keys.ops }, { 'X-Real-IP': '10.9.9.9' });
  t.is(elsewhere.error?.code, 2);
  t.is(elsewhere.error?.message, 'invalid key');
});

test('a token idle past session_timeout says it expired too', async (t) => {
  const { client } = await startController(t, { ini: { webapi: { session_timeout: 1 } } });
  const { token } = await client.ok('login', m);
  // polled with the master key, not the token: using it would keep it alive
  await until('the token to be idle past its timeout', async () => (await client.ok('list_tokens', m)).length === 0);
  t.is((await client.rpc('test', { k: token })).error?.message, 'token expired');
});
