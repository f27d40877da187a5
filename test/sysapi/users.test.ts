import test from 'ava';
import { startController, Keys } from '../helpers/controller';
import { Err, failsBoth } from '../helpers/api-errors';
import { Exists, Transports, errOf, okVia, via, sqlite3, pySqlite, userDbOf } from '../helpers/accounts';
import { needs } from '../helpers/tools';

const UserFunctions: [string, Record<string, unknown>][] = [
  ['create_user', { u: 'x', p: 'x', a: 'ops' }], ['destroy_user', { u: 'x' }], ['get_user', { u: 'x' }],
  ['user_get', { u: 'x' }], ['list_users', {}], ['user_list', {}], ['set_user_key', { u: 'x', a: 'ops' }],
  ['set_user_password', { u: 'x', p: 'y' }],
];

for (const tr of Transports) {
  needs('sqlite3', 'python3')(`user accounts: create, get, list, set key, set password, destroy over ${tr}`, async (t) => {
    const { client, dir } = await startController(t);
    const m = { k: Keys.master };
    t.deepEqual(await okVia(client, tr, 'create_user', { ...m, u: 'alice', p: 'wonderland', a: 'ops' }), { key: 'ops', key_id: 'ops', user: 'alice' });
    await okVia(client, tr, 'create_user', { ...m, u: 'bob', p: 'builder', a: 'plain' });
    t.is((await via(client, tr, 'create_user', { ...m, u: 'alice', p: 'x', a: 'ops' })).error, errOf(tr, Exists));
    t.is((await via(client, tr, 'create_user', { ...m, u: 'carol', p: 'x', a: 'nokey' })).error, errOf(tr, Err.notFound));
    t.is((await via(client, tr, 'create_user', { ...m, u: 'a:b', p: 'x', a: 'ops' })).error, errOf(tr, Err.invalid));
    t.is((await via(client, tr, 'create_user', { ...m, u: 'carol', p: '', a: 'ops' })).error, errOf(tr, Err.invalid));
    t.is((await via(client, tr, 'create_user', { ...m, u: 'carol', a: 'ops' })).error, errOf(tr, Err.invalid));

    t.deepEqual(await okVia(client, tr, 'get_user', { ...m, u: 'alice' }), { key: 'ops', key_id: 'ops', user: 'alice' });
    t.deepEqual(await okVia(client, tr, 'user_get', { ...m, u: 'bob' }), { key: 'plain', key_id: 'plain', user: 'bob' });
    t.is((await via(client, tr, 'get_user', { ...m, u: 'nobody' })).error, errOf(tr, Err.notFound));
    const list = [{ key_id: 'ops', user: 'alice' }, { key_id: 'plain', user: 'bob' }];
    t.deepEqual(await okVia(client, tr, 'list_users', m), list);
    t.deepEqual(await okVia(client, tr, 'user_list', m), list);

    // the password is stored salted and slow, never as given
    const rows = sqlite3(userDbOf(dir), 'SELECT u, p, k FROM users ORDER BY u');
    t.deepEqual(rows.map((r) => [r.u, r.k]), [['alice', 'ops'], ['bob', 'plain']]);
    t.regex(String(rows[0].p), /^\$scrypt\$ln=\d+,r=\d+,p=\d+\$/);
    t.not(rows[0].p, rows[1].p);
    t.false(String(rows[0].p).includes('wonderland'));

    const login = (u: string, p: string) => via(client, tr, 'login', { u, p });
    const { token } = (await login('alice', 'wonderland')).result;
    t.is((await okVia(client, tr, 'test', { k: token })).acl.key_id, 'ops');

    await okVia(client, tr, 'set_user_key', { ...m, u: 'alice', a: 'plain' });
    t.is((await via(client, tr, 'test', { k: token })).error, errOf(tr, Err.denied), 'a key change ends the user tokens');
    t.is((await login('alice', 'wonderland')).result.key, 'plain');
    t.is((await via(client, tr, 'set_user_key', { ...m, u: 'alice', a: 'nokey' })).error, errOf(tr, Err.notFound));
    t.is((await via(client, tr, 'set_user_key', { ...m, u: 'nobody', a: 'ops' })).error, errOf(tr, Err.notFound));

    const { token: token2 } = (await login('alice', 'wonderland')).result;
    await okVia(client, tr, 'set_user_password', { ...m, u: 'alice', p: 'looking-glass' });
    t.is((await via(client, tr, 'test', { k: token2 })).error, errOf(tr, Err.denied), 'a password change ends the user tokens');
    t.is((await login('alice', 'wonderland')).error, errOf(tr, Err.denied));
    t.is((await login('alice', 'looking-glass')).result.user, 'alice');
    t.is((await via(client, tr, 'set_user_password', { ...m, u: 'nobody', p: 'x' })).error, errOf(tr, Err.notFound));
    t.is((await via(client, tr, 'set_user_password', { ...m, u: 'alice', p: '' })).error, errOf(tr, Err.invalid));

    const { token: token3 } = (await login('bob', 'builder')).result;
    await okVia(client, tr, 'destroy_user', { ...m, u: 'bob' });
    t.is((await via(client, tr, 'test', { k: token3 })).error, errOf(tr, Err.denied), 'destroying a user ends its tokens');
    t.is((await login('bob', 'builder')).error, errOf(tr, Err.denied));
    t.is((await via(client, tr, 'destroy_user', { ...m, u: 'bob' })).error, errOf(tr, Err.notFound));
    t.deepEqual(pySqlite(userDbOf(dir), 'SELECT u, k FROM users'), [{ u: 'alice', k: 'plain' }]);
  });
}

test('every user function needs a master key (2 / 403 for others)', async (t) => {
  const { client } = await startController(t);
  for (const k of [Keys.ops, Keys.plain]) {
    for (const [fn, params] of UserFunctions) await failsBoth(t, client, fn, { k, ...params }, Err.denied);
  }
  await failsBoth(t, client, 'create_user', { k: Keys.master, u: 'x', p: 'y' }, Err.invalid); // a missing
});

needs('sqlite3')('user accounts are written at once, even with db_update manual', async (t) => {
  const ini = { server: { db_update: 'manual' } };
  const first = await startController(t, { ini });
  const m = { k: Keys.master };
  await first.client.ok('create_user', { ...m, u: 'dora', p: 'explorer', a: 'ops' });
  t.is(sqlite3(userDbOf(first.dir), 'SELECT k FROM users')[0]?.k, 'ops');
  await first.stop();
  const second = await startController(t, { dir: first.dir, ini });
  t.is((await second.client.ok('login', { u: 'dora', p: 'explorer' })).key, 'ops');
});

test('a user whose key was destroyed cannot log in', async (t) => {
  const { client } = await startController(t);
  const m = { k: Keys.master };
  await client.ok('create_key', { ...m, i: 'temp' });
  await client.ok('create_user', { ...m, u: 'eve', p: 'pw', a: 'temp' });
  t.is((await client.ok('login', { u: 'eve', p: 'pw' })).key, 'temp');
  await client.ok('destroy_key', { ...m, i: 'temp' });
  t.is((await client.rpc('login', { u: 'eve', p: 'pw' })).error?.code, 2);
  t.deepEqual(await client.ok('get_user', { ...m, u: 'eve' }), { key: 'temp', key_id: 'temp', user: 'eve' });
});
