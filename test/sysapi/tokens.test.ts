import test from 'ava';
import { startController, Keys } from '../helpers/controller';
import { Err } from '../helpers/api-errors';
import { Transports, errOf, okVia, via } from '../helpers/accounts';
import { TestStream, startStreamController } from '../helpers/stream-client';
import { sleep } from '../helpers/wait';

const m = { k: Keys.master };
const Restricted = { code: 15, status: 403 } as const;
const okOf = (tr: string) => (tr === 'jrpc' ? { ok: true } : { result: 'OK' });

/** A controller with user op (password secret) on key `ops`, and user boss on the master key. */
async function withUsers(t: any, ini: Record<string, Record<string, string | number | boolean>> = {}) {
  const running = await startController(t, { ini: { ...ini, webapi: { login_free_failures: 100, ...ini.webapi } } });
  await running.client.ok('create_user', { ...m, u: 'op', p: 'secret', a: 'ops' });
  await running.client.ok('create_user', { ...m, u: 'boss', p: 'secret', a: 'masterkey' });
  return running;
}

for (const tr of Transports) {
  test(`list_tokens and drop_tokens by token, user and key over ${tr}; none of them is 11`, async (t) => {
    const { client } = await withUsers(t);
    const user = (await client.ok('login', { u: 'op', p: 'secret' })).token;
    const key = (await client.ok('login', { k: Keys.ops })).token;
    const master = (await client.ok('login', m)).token;
    const before = Date.now() / 1000;
    const list = await okVia(client, tr, 'list_tokens', m);
    // 3.3's shape: by user, a key login's user is ""
    t.deepEqual(list.map((x: any) => [x.u, x.ki, x.m, x.utp]), [['', 'ops', 1, null], ['', 'masterkey', 1, null], ['op', 'ops', 1, null]]);
    t.deepEqual(list.map((x: any) => x.u), ['', '', 'op']);
    t.deepEqual(list.map((x: any) => x.token).sort(), [user, key, master].sort());
    t.deepEqual(list.find((x: any) => x.token === user), { u: 'op', ki: 'ops', utp: null, t: list.find((x: any) => x.token === user).t, m: 1, token: user });
    for (const x of list) t.true(x.t <= before + 1 && x.t > before - 60, 'creation or last use, Unix seconds');
    t.is((await via(client, tr, 'list_tokens', { k: Keys.ops })).error, errOf(tr, Err.denied), 'master only');
    t.is((await via(client, tr, 'drop_tokens', { k: Keys.ops, i: 'ops' })).error, errOf(tr, Err.denied), 'master only');

    // none of a, u, i (or only empty ones): 11
    for (const none of [{}, { a: '', u: '', i: '' }]) t.is((await via(client, tr, 'drop_tokens', { ...m, ...none })).error, errOf(tr, Err.invalid));
    t.is((await okVia(client, tr, 'list_tokens', m)).length, 3, 'nothing dropped');

    // a: one token; an unknown one fails (3.3: false, 10)
    t.deepEqual(await okVia(client, tr, 'drop_tokens', { ...m, a: master }), okOf(tr));
    t.is((await via(client, tr, 'test', { k: master })).error, errOf(tr, Err.denied), 'a dropped token answers 2');
    t.is((await via(client, tr, 'drop_tokens', { ...m, a: master })).error, errOf(tr, Err.failed));
    t.deepEqual((await okVia(client, tr, 'list_tokens', m)).map((x: any) => x.token).sort(), [user, key].sort());

    // u: every token of the user, not the other tokens of its key
    const user2 = (await client.ok('login', { u: 'op', p: 'secret' })).token;
    t.deepEqual(await okVia(client, tr, 'drop_tokens', { ...m, u: 'op' }), okOf(tr));
    for (const gone of [user, user2]) t.is((await via(client, tr, 'test', { k: gone })).error, errOf(tr, Err.denied));
    t.is((await okVia(client, tr, 'test', { k: key })).acl.key_id, 'ops');
    t.deepEqual(await okVia(client, tr, 'drop_tokens', { ...m, u: 'nobody' }), okOf(tr), 'an unknown user: nothing to drop (as 3.3)');

    // i: every token of the key, user logins too
    const user3 = (await client.ok('login', { u: 'op', p: 'secret' })).token;
    const boss = (await client.ok('login', { u: 'boss', p: 'secret' })).token;
    t.deepEqual(await okVia(client, tr, 'drop_tokens', { ...m, i: 'ops' }), okOf(tr));
    for (const gone of [key, user3]) t.is((await via(client, tr, 'test', { k: gone })).error, errOf(tr, Err.denied));
    t.deepEqual((await okVia(client, tr, 'list_tokens', m)).map((x: any) => x.token), [boss]);
    // the first given counts (3.3: a, then u, then i)
    t.deepEqual(await okVia(client, tr, 'drop_tokens', { ...m, u: 'boss', i: 'masterkey', a: '' }), okOf(tr));
    t.deepEqual(await okVia(client, tr, 'list_tokens', m), []);
  });
}

test('tokens off (session_timeout = 0): list_tokens, drop_tokens and set_token_readonly fail (10), as 3.3', async (t) => {
  const { client } = await startController(t, { ini: { webapi: { session_timeout: 0 } } });
  for (const [fn, p] of [['list_tokens', {}], ['drop_tokens', { u: 'x' }], ['set_token_readonly', {}]] as const) {
    t.is((await client.rpc(fn, { ...m, ...p })).error?.code, Err.failed.code, fn);
  }
});

test('drop_tokens ends the event streams of the tokens at once; a stream of another token goes on', async (t) => {
  const { url, client } = await startStreamController(t);
  const STATE = [{ subject: 'state', types: ['#'], groups: ['#'] }];
  const { token } = await client.ok('login', m);
  const other = (await client.ok('login', m)).token;
  const dropped = await TestStream.open(t, url, token, STATE);
  const kept = await TestStream.open(t, url, other, STATE);
  await dropped.next((x) => x.s === 'state');
  await kept.next((x) => x.s === 'state');
  await client.ok('drop_tokens', { ...m, a: token });
  // well within the ping round (30 s): the close comes from the drop itself
  const closed = await Promise.race([dropped.closed, sleep(5_000).then(() => undefined)]);
  t.is(closed?.code, 4001);
  t.is(kept.ws.readyState, kept.ws.OPEN);
  await client.ok('update', { ...m, i: 'sensor:home/t1', v: '42' });
  t.like((await kept.next((x) => x.s === 'state')).d[0], { oid: 'sensor:home/t1', value: '42' });
});

for (const tr of Transports) {
  test(`set_token_readonly over ${tr}: writes answer 15, reads work; login with the token and credentials makes it normal`, async (t) => {
    const { client } = await withUsers(t, { sysapi: { file_management: true } });
    await client.ok('create', { ...m, i: 'sensor:home/t1' });
    const { token } = await client.ok('login', { u: 'boss', p: 'secret' });
    const k = { k: token };
    t.is((await via(client, tr, 'set_token_readonly', m)).error, errOf(tr, Err.failed), 'a key is no token (3.3: "user is not logged in")');
    t.deepEqual(await okVia(client, tr, 'set_token_readonly', k), okOf(tr));
    t.is((await okVia(client, tr, 'list_tokens', m)).find((x: any) => x.token === token).m, 2);

    // every function that needs more than a valid key is restricted (3.3), reading ones too; so are writes of any key
    for (const [fn, p] of [['set_cvar', { i: 'x', v: '1' }], ['get_cvar', {}], ['list_keys', {}], ['create_key', { i: 'n1' }],
      ['log_get', {}], ['list_tokens', {}], ['file_put', { i: 'f.txt', m: 'x' }]] as const) {
      const r = await via(client, tr, fn, { ...k, ...p });
      t.is(r.error, errOf(tr, Restricted), fn);
      if (tr === 'jrpc') t.is(r.message, 'token restricted');
    }
    t.is((await client.rpc('update', { ...k, i: 'sensor:home/t1', v: '1' })).error?.code, 15, 'update (any key) writes');
    t.false((await client.ok('list_keys', m)).some((x: any) => x.key_id === 'n1'), 'nothing was done');
    // reads of any key still answer; test tells what any key is told
    const info = await okVia(client, tr, 'test', k);
    t.is(info.acl.key_id, 'masterkey');
    t.false('file_management' in info);
    t.false('debug' in info);
    t.true('file_management' in await okVia(client, tr, 'test', m));
    t.true(Array.isArray(await okVia(client, tr, 'api_log_get', k)));
    t.like(await client.ok('state', { ...k, i: 'sensor:home/t1' }), { oid: 'sensor:home/t1' });
    // a token check tells the mode; without credentials it stays read-only
    t.deepEqual(await okVia(client, tr, 'login', { a: token }), { key: 'masterkey', token, mode: 'readonly', user: 'boss' });
    t.is((await via(client, tr, 'set_cvar', { ...k, i: 'x', v: '1' })).error, errOf(tr, Restricted));
    // wrong credentials, or another key's, or the token vouching for itself: 2, and it stays read-only
    for (const bad of [{ a: token, u: 'boss', p: 'wrong' }, { a: token, u: 'op', p: 'secret' }, { a: token, k: Keys.ops }, { a: token, k: token }]) {
      t.is((await via(client, tr, 'login', bad)).error, errOf(tr, Err.denied), JSON.stringify(bad));
    }
    t.is((await via(client, tr, 'set_cvar', { ...k, i: 'x', v: '1' })).error, errOf(tr, Restricted));
    // the token and the user's credentials: normal again, the same token
    t.deepEqual(await okVia(client, tr, 'login', { a: token, u: 'boss', p: 'secret' }), { key: 'masterkey', token, mode: 'normal', user: 'boss' });
    t.deepEqual(await okVia(client, tr, 'set_cvar', { ...k, i: 'x', v: '1' }), okOf(tr));
    t.is((await okVia(client, tr, 'list_tokens', m)).find((x: any) => x.token === token).m, 1);
    // the key itself restores too
    await okVia(client, tr, 'set_token_readonly', k);
    t.is((await via(client, tr, 'get_cvar', { ...k, i: 'x' })).error, errOf(tr, Restricted));
    t.like(await okVia(client, tr, 'login', { a: token, k: Keys.master }), { token, mode: 'normal' });
    t.deepEqual(await okVia(client, tr, 'get_cvar', { ...k, i: 'x' }), await okVia(client, tr, 'get_cvar', { ...m, i: 'x' }));
    // another token of the same user was never restricted
    const fresh = (await client.ok('login', { u: 'boss', p: 'secret' })).token;
    await okVia(client, tr, 'set_token_readonly', k);
    t.deepEqual(await okVia(client, tr, 'set_cvar', { k: fresh, i: 'x', v: '2' }), okOf(tr));
  });
}

test('error code 15 is in rpc.discover', async (t) => {
  const { client } = await startController(t);
  const d = await client.ok('rpc.discover', {});
  t.deepEqual(d['x-errors'].find((e: any) => e.code === 15), { kind: 'token_restricted', code: 15, status: 403 });
  for (const fn of ['list_tokens', 'drop_tokens', 'set_token_readonly', 'api_log_get']) t.truthy(d.methods.find((x: any) => x.name === fn), fn);
});
