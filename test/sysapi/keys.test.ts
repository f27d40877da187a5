import fs from 'node:fs';
import test from 'ava';
import { startController, Keys } from '../helpers/controller';
import { SaveRegistry } from '../../core/save-registry';
import { Err, failsBoth } from '../helpers/api-errors';
import { Exists, Transports, errOf, okVia, via, sqlite3, userDbOf } from '../helpers/accounts';
import { needs } from '../helpers/tools';

const KeyFunctions: [string, Record<string, unknown>][] = [
  ['create_key', { i: 'x' }], ['destroy_key', { i: 'x' }], ['list_key_props', { i: 'x' }],
  ['list_keys', {}], ['regenerate_key', { i: 'x' }], ['set_key_prop', { i: 'x', p: 'groups', v: 'a' }],
];

for (const tr of Transports) {
  test(`create_key, list_key_props, list_keys, destroy_key over ${tr}`, async (t) => {
    const { client } = await startController(t);
    const m = { k: Keys.master };
    const created = await okVia(client, tr, 'create_key', { ...m, i: 'k1' });
    t.is(created.id, 'k1');
    t.regex(created.key, /^[A-Za-z0-9]{64}$/);
    t.is(created.master, false);
    t.is(created.dynamic, true);
    t.deepEqual(created.hosts_allow, ['0.0.0.0/0', '::/0']);
    t.deepEqual(created.allow, []);
    // the new key is a key: test answers with its acl
    const acl = (await okVia(client, tr, 'test', { k: created.key })).acl;
    t.is(acl.key_id, 'k1');
    t.is(acl.dynamic, true);
    t.deepEqual(await okVia(client, tr, 'list_key_props', { ...m, i: 'k1' }), created);
    const list = await okVia(client, tr, 'list_keys', m);
    // 3.3's order: the master key first, then the others by id; every element has cdata
    t.deepEqual(list.map((k: any) => k.key_id), ['masterkey', 'k1', 'ops', 'plain']);
    t.true(list.every((k: any) => Array.isArray(k.cdata)));
    const k1 = list.find((k: any) => k.key_id === 'k1');
    t.like(k1, { master: false, dynamic: true, sysfunc: false, allow: { cmd: false, device: false, lock: false } });
    t.false('key' in k1, 'list_keys never shows key values');
    t.like(list.find((k: any) => k.key_id === 'masterkey'), { master: true, dynamic: false });
    t.false('allow' in list.find((k: any) => k.key_id === 'masterkey'));
    t.like(list.find((k: any) => k.key_id === 'ops'), { dynamic: false, sysfunc: true, allow: { cmd: true, device: true, lock: true } });
    // a static key's properties are readable
    t.is((await okVia(client, tr, 'list_key_props', { ...m, i: 'ops' })).key, Keys.ops);

    t.is((await via(client, tr, 'create_key', { ...m, i: 'k1' })).error, errOf(tr, Exists));
    t.is((await via(client, tr, 'create_key', { ...m, i: 'ops' })).error, errOf(tr, Exists), 'a static id is taken too');
    t.is((await via(client, tr, 'create_key', { ...m, i: 'a,b' })).error, errOf(tr, Err.invalid));
    t.is((await via(client, tr, 'create_key', { ...m, i: 'x'.repeat(65) })).error, errOf(tr, Err.invalid));

    await okVia(client, tr, 'destroy_key', { ...m, i: 'k1' });
    t.is((await via(client, tr, 'test', { k: created.key })).error, errOf(tr, Err.denied), 'a destroyed key is refused');
    t.is((await via(client, tr, 'list_key_props', { ...m, i: 'k1' })).error, errOf(tr, Err.notFound));
    t.is((await via(client, tr, 'destroy_key', { ...m, i: 'k1' })).error, errOf(tr, Err.notFound));
  });

  test(`set_key_prop: every property, and bad values over ${tr}`, async (t) => {
    const { client } = await startController(t);
    const m = { k: Keys.master };
    const { key } = await okVia(client, tr, 'create_key', { ...m, i: 'k2' });
    const set = (p: string, v?: unknown) => via(client, tr, 'set_key_prop', { ...m, i: 'k2', p, ...(v === undefined ? {} : { v }) });
    const props = async () => okVia(client, tr, 'list_key_props', { ...m, i: 'k2' });

    for (const p of ['items', 'groups', 'items_ro', 'groups_ro', 'items_deny', 'groups_deny', 'pvt', 'rpvt', 'cdata']) {
      t.false('error' in await set(p, ['a/b', ' c ', '']), p);
      t.deepEqual((await props())[p], ['a/b', 'c'], p);
      t.false('error' in await set(p, 'x, y,,z'), p);
      t.deepEqual((await props())[p], ['x', 'y', 'z'], p);
      t.false('error' in await set(p), `${p}: no value revokes`);
      t.deepEqual((await props())[p], [], p);
    }
    t.false('error' in await set('allow', 'cmd,lock'));
    t.deepEqual((await props()).allow, ['cmd', 'lock']);
    t.is((await set('allow', 'cmd,fly')).error, errOf(tr, Err.invalid), 'unknown allow value');
    t.deepEqual((await props()).allow, ['cmd', 'lock'], 'a refused value changes nothing');

    t.false('error' in await set('sysfunc', 'yes'));
    t.is((await okVia(client, tr, 'test', { k: key })).db_update, 1, 'sysfunc keys see db_update');
    t.is((await set('sysfunc', 'maybe')).error, errOf(tr, Err.invalid), 'bad boolean');
    t.false('error' in await set('sysfunc'));
    t.false('db_update' in await okVia(client, tr, 'test', { k: key }));

    t.false('error' in await set('hosts_assign', '10.9.9.9, fd00::/8'));
    t.deepEqual((await props()).hosts_assign, ['10.9.9.9', 'fd00::/8']);
    t.is((await set('hosts_assign', '10.9.9.300')).error, errOf(tr, Err.invalid), 'bad network');
    t.false('error' in await set('hosts_allow', '10.0.0.0/8'));
    t.is((await via(client, tr, 'test', { k: key })).error, errOf(tr, Err.denied), 'not allowed from 127.0.0.1 any more');
    t.is((await set('hosts_allow', 'nonsense')).error, errOf(tr, Err.invalid), 'bad network');
    t.false('error' in await set('hosts_allow', ''));
    t.deepEqual((await props()).hosts_allow, ['0.0.0.0/0', '::/0'], 'empty hosts_allow returns to all networks');
    t.is((await okVia(client, tr, 'test', { k: key })).acl.key_id, 'k2');

    t.is((await set('colour', 'red')).error, errOf(tr, Err.notFound), 'unknown property');
    t.is((await via(client, tr, 'set_key_prop', { ...m, i: 'nokey', p: 'groups', v: 'a' })).error, errOf(tr, Err.notFound));

    const mine = 'MyOwnKeyValue-0123456789';
    t.false('error' in await set('key', mine));
    t.is((await via(client, tr, 'test', { k: key })).error, errOf(tr, Err.denied), 'the old value is gone');
    t.is((await okVia(client, tr, 'test', { k: mine })).acl.key_id, 'k2');
    t.is((await set('key', Keys.plain)).error, errOf(tr, Exists), 'two keys never share a value');
    t.is((await set('key', 'token:abc')).error, errOf(tr, Err.invalid));
    t.is((await set('key')).error, errOf(tr, Err.invalid), 'a key value cannot be revoked');
  });

  test(`regenerate_key; master and static keys cannot be changed over ${tr}`, async (t) => {
    const { client } = await startController(t);
    const m = { k: Keys.master };
    const { key } = await okVia(client, tr, 'create_key', { ...m, i: 'k3' });
    const re = await okVia(client, tr, 'regenerate_key', { ...m, i: 'k3' });
    t.regex(re.key, /^[A-Za-z0-9]{64}$/);
    t.not(re.key, key);
    t.is((await via(client, tr, 'test', { k: key })).error, errOf(tr, Err.denied));
    t.is((await okVia(client, tr, 'test', { k: re.key })).acl.key_id, 'k3');
    t.is((await via(client, tr, 'regenerate_key', { ...m, i: 'nokey' })).error, errOf(tr, Err.notFound));
    for (const i of ['masterkey', 'ops']) {
      for (const [fn, extra] of [['destroy_key', {}], ['regenerate_key', {}], ['set_key_prop', { p: 'groups', v: 'a' }]] as const) {
        t.is((await via(client, tr, fn, { ...m, i, ...extra })).error, errOf(tr, Err.failed), `${fn} ${i}`);
      }
    }
    t.is((await okVia(client, tr, 'test', { k: Keys.ops })).acl.key_id, 'ops', 'the static key still works');
  });
}

test('every key function needs a master key (2 / 403 for others)', async (t) => {
  const { client } = await startController(t);
  for (const k of [Keys.ops, Keys.plain]) {
    for (const [fn, params] of KeyFunctions) await failsBoth(t, client, fn, { k, ...params }, Err.denied);
  }
  await failsBoth(t, client, 'create_key', { k: Keys.master }, Err.invalid); // i missing
  await failsBoth(t, client, 'create_key', { k: Keys.master, i: 'a', x: 1 }, Err.invalid); // unknown parameter
});

test('a key change ends its tokens at once', async (t) => {
  const { client } = await startController(t);
  const m = { k: Keys.master };
  const { key } = await client.ok('create_key', { ...m, i: 'tk' });
  const token = async () => {
    const { token: tok } = await client.ok('login', { k: key });
    t.is((await client.ok('test', { k: tok })).acl.key_id, 'tk');
    return tok;
  };
  let tok = await token();
  await client.ok('set_key_prop', { ...m, i: 'tk', p: 'groups', v: 'g' });
  t.is((await client.rpc('test', { k: tok })).error?.code, 2, 'set_key_prop ends tokens');
  tok = await token();
  const { key: key2 } = await client.ok('regenerate_key', { ...m, i: 'tk' });
  t.is((await client.rpc('test', { k: tok })).error?.code, 2, 'regenerate_key ends tokens');
  const { token: tok2 } = await client.ok('login', { k: key2 });
  await client.ok('destroy_key', { ...m, i: 'tk' });
  t.is((await client.rpc('test', { k: tok2 })).error?.code, 2, 'destroy_key ends tokens');
});

needs('sqlite3')('db_update instant: every key change is in the user db file before the call answers', async (t) => {
  const first = await startController(t);
  const m = { k: Keys.master };
  const db = userDbOf(first.dir);
  const { key } = await first.client.ok('create_key', { ...m, i: 'inst' });
  t.like(sqlite3(db, "SELECT * FROM apikeys WHERE k_id = 'inst'")[0], { k: key, m: 0, s: 0, hal: '0.0.0.0/0,::/0' });
  await first.client.ok('set_key_prop', { ...m, i: 'inst', p: 'groups', v: ['g1', 'g2'] });
  await first.client.ok('set_key_prop', { ...m, i: 'inst', p: 'sysfunc', v: true });
  t.like(sqlite3(db, "SELECT g, s FROM apikeys WHERE k_id = 'inst'")[0], { g: 'g1,g2', s: 1 });
  await first.client.ok('create_key', { ...m, i: 'gone' });
  await first.client.ok('destroy_key', { ...m, i: 'gone' });
  t.deepEqual(sqlite3(db, "SELECT k_id FROM apikeys WHERE k_id = 'gone'"), []);
  await first.stop();
  const second = await startController(t, { dir: first.dir });
  const acl = (await second.client.ok('test', { k: key })).acl;
  t.like(acl, { key_id: 'inst', sysfunc: true, groups: ['g1', 'g2'], dynamic: true });
  t.is((await second.client.rpc('list_key_props', { ...m, i: 'gone' })).error?.code, 1);
});

needs('sqlite3')('db_update manual: key changes are written by save or by the save parameter, else lost at restart', async (t) => {
  const first = await startController(t, { ini: { server: { db_update: 'manual' } } });
  const m = { k: Keys.master };
  await first.client.ok('create_key', { ...m, i: 'unsaved' });
  await first.client.ok('create_key', { ...m, i: 'saved', save: true });
  await first.client.ok('create_key', { ...m, i: 'later' });
  await first.client.ok('set_key_prop', { ...m, i: 'later', p: 'groups', v: 'g1' });
  await first.client.ok('set_key_prop', { ...m, i: 'later', p: 'items', v: 'unit:a/b', save: true });
  await first.client.ok('set_key_prop', { ...m, i: 'saved', p: 'groups', v: 'not-saved' });
  await first.stop();
  const second = await startController(t, { dir: first.dir, ini: { server: { db_update: 'manual' } } });
  const ids = (await second.client.ok('list_keys', m)).map((k: any) => k.key_id);
  t.true(ids.includes('saved'));
  t.false(ids.includes('unsaved'), 'not saved: gone after a restart');
  t.deepEqual((await second.client.ok('list_key_props', { ...m, i: 'saved' })).groups, []);
  t.like(await second.client.ok('list_key_props', { ...m, i: 'later' }), { groups: ['g1'], items: ['unit:a/b'] });
  // `save` (the kernel's save registry) writes every pending change, destroyed keys included
  await second.client.ok('create_key', { ...m, i: 'bysave' });
  await second.client.ok('destroy_key', { ...m, i: 'later' });
  t.deepEqual(sqlite3(userDbOf(first.dir), "SELECT k_id FROM apikeys WHERE k_id = 'bysave'"), []);
  t.deepEqual(await second.ctl.get(SaveRegistry).saveAll(), []);
  t.deepEqual(sqlite3(userDbOf(first.dir), 'SELECT k_id FROM apikeys ORDER BY k_id').map((r) => r.k_id), ['bysave', 'saved']);
  await second.stop();
  const third = await startController(t, { dir: first.dir });
  const ids3 = (await third.client.ok('list_keys', m)).map((k: any) => k.key_id);
  t.true(ids3.includes('bysave'));
  t.false(ids3.includes('later'));
});

needs('sqlite3')('db_update on_exit: key changes are written when the controller stops', async (t) => {
  const ini = { server: { db_update: 'on_exit' } };
  const first = await startController(t, { ini });
  const m = { k: Keys.master };
  const { key } = await first.client.ok('create_key', { ...m, i: 'atexit' });
  // a controller that started without a user db makes it with its first write: until then, no file or no row
  const file = userDbOf(first.dir);
  t.false(fs.existsSync(file) && sqlite3(file, "SELECT k_id FROM apikeys WHERE k_id = 'atexit'").length > 0, 'not yet written');
  await first.stop();
  t.is(sqlite3(userDbOf(first.dir), "SELECT k FROM apikeys WHERE k_id = 'atexit'")[0]?.k, key);
  const second = await startController(t, { dir: first.dir, ini });
  t.is((await second.client.ok('test', { k: key })).acl.key_id, 'atexit');
});
