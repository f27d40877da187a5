import test from 'ava';
import fs from 'node:fs';
import { startItemsController, ItemKeys, NOTIFIER_FILES } from '../helpers/items';
import { readItemsState } from '../helpers/items-file';

test('create, list, state, update and destroy through JSON RPC and /uc-api/', async (t) => {
  const { ok, direct, client } = await startItemsController(t);
  const created = await ok('create', { i: 'sensor:env/temp' });
  t.like(created, { oid: 'sensor:env/temp', type: 'sensor', group: 'env', id: 'temp', full_id: 'env/temp', status: 0, value: null });

  const d = await direct('create', { k: ItemKeys.master, i: 'unit:lights/hall' });
  t.is(d.status, 200);
  t.like(d.body, { oid: 'unit:lights/hall', nstatus: 0, nvalue: null, action_enabled: true });

  t.deepEqual((await ok('list')).map((i: any) => i.oid).sort(), ['sensor:env/temp', 'unit:lights/hall']);
  t.deepEqual((await ok('list', { p: 'unit' })).map((i: any) => i.oid), ['unit:lights/hall']);
  t.deepEqual((await ok('state', { g: 'env/#' })).map((i: any) => i.oid), ['sensor:env/temp']);

  t.like(await ok('update', { i: 'sensor:env/temp', s: 1, v: '21.5' }), { ok: true });
  const u = await direct('update', { k: ItemKeys.master, i: 'sensor:env/temp', v: '22' });
  t.deepEqual(u.body, { result: 'OK' });
  t.like(await ok('state', { i: 'sensor:env/temp' }), { status: 1, value: '22' });
  t.like((await direct('state', { k: ItemKeys.master, i: 'sensor:env/temp' })).body, { status: 1, value: '22' });
  // "" and "null" stand for no value
  await ok('update', { i: 'sensor:env/temp', v: 'null' });
  t.is((await ok('state', { i: 'sensor:env/temp' })).value, null);

  t.like(await ok('destroy', { i: 'sensor:env/temp' }), { ok: true });
  t.is((await client.rpc('state', { k: ItemKeys.master, i: 'sensor:env/temp' })).error?.code, 1);
  // the product functions are not at /sys-api/
  t.is((await client.get('state', { k: ItemKeys.master, i: 'unit:lights/hall' })).status, 405);
});

test('bad input gets the right error codes', async (t) => {
  const { ok, direct, client } = await startItemsController(t);
  await ok('create', { i: 'unit:g/u1' });
  const code = async (fn: string, p: Record<string, unknown>) => (await client.rpc(fn, { k: ItemKeys.master, ...p })).error?.code;
  for (const bad of ['unit:g/', 'unit:/u', 'motor:g/u', 'unit:g/../x', 'unit:g/.hidden', 'unit:g/#', 'unit:g+/x', 'unit g/x', 'unit:g//x']) {
    t.is(await code('create', { i: bad }), 11, bad);
  }
  t.is(await code('create', { i: 'unit:g/u1' }), 12);
  t.is(await code('create', { i: 'unit:other/u1' }), 12, 'a unit id is unique: it names the script');
  t.is(await code('state', { i: 'unit:g/nope' }), 1);
  t.is(await code('update', { i: 'unit:g/u1' }), 11, 'neither s nor v');
  t.is(await code('update', { i: 'unit:g/u1', s: 'on' }), 11);
  t.is(await code('update', { i: 'unit:g/u1', s: 1.5 }), 11);
  t.is(await code('action', { i: 'unit:g/u1' }), 11, 'no s');
  t.is(await code('action', { i: 'unit:g/u1', s: 1, w: -1 }), 11);
  t.is(await code('action', { i: 'unit:g/u1', s: 1, w: 1e10 }), 11, 'past what a timer can wait');
  t.is(await code('set_prop', { i: 'unit:g/u1', p: 'action_timeout', v: 1e10 }), 11);
  t.is(await code('list', { p: 'motor' }), 11);
  await ok('create', { i: 'sensor:g/s1' });
  t.is(await code('action', { i: 'sensor:g/s1', s: 1 }), 14, 'only units run actions');
  t.is(await code('result', { u: 'no-such-uuid' }), 1);
  t.is(await code('nonexistent_fn', {}), 6);
  const r = await direct('create', { k: ItemKeys.master, i: 'bad' });
  t.is(r.status, 400);
  t.is(r.body.result, 'ERROR');
  t.regex(r.body._error, /oid/);
});

test('permissions: master creates; items/groups lists decide reading and writing; allow=device acts', async (t) => {
  const { ok, client } = await startItemsController(t);
  for (const i of ['unit:g1/u', 'unit:g1/sub/u2', 'sensor:g1/secret', 'sensor:g2/ro', 'sensor:g2/other']) await ok('create', { i });
  const code = async (k: string, fn: string, p: Record<string, unknown>) => (await client.rpc(fn, { k, ...p })).error?.code;
  const ids = async (k: string) => (await client.ok('list', { k })).map((i: any) => i.oid).sort();

  t.is(await code(ItemKeys.ops, 'create', { i: 'unit:g1/x' }), 2, 'create needs master');
  t.is(await code(ItemKeys.ops, 'destroy', { i: 'unit:g1/u' }), 2);
  t.is(await code(ItemKeys.ops, 'set_prop', { i: 'unit:g1/u', p: 'action_enabled', v: false }), 2);

  // g1: groups g1/# read/write, sensor:g2/ro read-only, no allow=device
  t.deepEqual(await ids(ItemKeys.g1), ['sensor:g1/secret', 'sensor:g2/ro', 'unit:g1/sub/u2', 'unit:g1/u']);
  t.is(await code(ItemKeys.g1, 'update', { i: 'unit:g1/sub/u2', s: 1 }), undefined);
  t.is(await code(ItemKeys.g1, 'state', { i: 'sensor:g2/ro' }), undefined);
  t.is(await code(ItemKeys.g1, 'update', { i: 'sensor:g2/ro', s: 1 }), 2, 'read-only');
  t.is(await code(ItemKeys.g1, 'state', { i: 'sensor:g2/other' }), 2);
  t.is(await code(ItemKeys.g1, 'state', { i: 'sensor:g2/missing' }), 2, 'no access says nothing about existence');
  t.is(await code(ItemKeys.g1, 'action', { i: 'unit:g1/u', s: 1 }), 2, 'actions need allow=device');

  // g1dev: same groups, allow=device, one sensor denied
  t.deepEqual(await ids(ItemKeys.g1dev), ['unit:g1/sub/u2', 'unit:g1/u']);
  t.is(await code(ItemKeys.g1dev, 'state', { i: 'sensor:g1/secret' }), 2);
  const a = await client.ok('action', { k: ItemKeys.g1dev, i: 'unit:g1/u', s: 1, w: 10 });
  t.is(a.status, 'completed');
  t.is(await code(ItemKeys.g1dev, 'result', { u: a.uuid }), undefined);
  t.is(await code(ItemKeys.ro, 'result', { u: a.uuid }), undefined);
  t.is(await code(ItemKeys.g1, 'action', { i: 'unit:g2/x', s: 1 }), 2);

  // ro: groups_ro #
  t.is((await ids(ItemKeys.ro)).length, 5);
  t.is(await code(ItemKeys.ro, 'update', { i: 'unit:g1/u', s: 0 }), 2);
  // plain: nothing
  t.deepEqual(await ids(ItemKeys.plain), []);
  t.is(await code(ItemKeys.plain, 'state', { i: 'unit:g1/u' }), 2);
  t.is(await code(ItemKeys.plain, 'result', { u: a.uuid }), 2);
  t.deepEqual(await client.ok('result', { k: ItemKeys.plain }), []);
  t.is(await code('wrong-key', 'list', {}), 2);
});

test('set_prop: known properties, their types, mqtt_update_default for new items', async (t) => {
  const { ok, client } = await startItemsController(t, { ini: { server: { mqtt_update_default: 'm1:2' } }, files: NOTIFIER_FILES });
  const code = async (p: Record<string, unknown>) => (await client.rpc('set_prop', { k: ItemKeys.master, ...p })).error?.code;
  const u = await ok('create', { i: 'unit:g/u' });
  t.is(u.mqtt_update, 'm1:2');
  const s = await ok('create', { i: 'sensor:g/s' });
  t.is(s.mqtt_update, 'm1:2');

  t.is(await code({ i: 'unit:g/u', p: 'no_such_prop', v: 1 }), 1);
  t.is(await code({ i: 'unit:g/nope', p: 'action_timeout', v: 1 }), 1);
  t.is(await code({ i: 'sensor:g/s', p: 'mqtt_control', v: 'm1' }), 11, 'sensors take no control');
  t.is(await code({ i: 'unit:g/u', p: 'action_timeout', v: -1 }), 11);
  t.is(await code({ i: 'unit:g/u', p: 'action_enabled', v: 'maybe' }), 11);
  t.is(await code({ i: 'unit:g/u', p: 'mqtt_update', v: 'm1:7' }), 11, 'qos 0..2');
  t.is(await code({ i: 'unit:g/u', p: 'mqtt_update', v: ':1' }), 11);
  t.is(await code({ i: 'unit:g/u', p: 'mqtt_update', v: 'nope' }), 11, 'no such notifier');
  t.is(await code({ i: 'unit:g/u', p: 'mqtt_control', v: 'j1' }), 11, 'not an mqtt notifier');
  await ok('set_prop', { i: 'unit:g/u', p: 'mqtt_update', v: 'm1:0' });
  await ok('set_prop', { i: 'unit:g/u', p: 'mqtt_control', v: 'm1' });

  await ok('set_prop', { i: 'unit:g/u', p: 'action_timeout', v: '2.5' });
  await ok('set_prop', { i: 'unit:g/u', p: 'action_enabled', v: 'no' });
  await ok('set_prop', { i: 'sensor:g/s', p: 'mqtt_update' }); // no value: cleared
  const st = await ok('state', { i: 'unit:g/u' });
  t.is(st.action_timeout, 2.5);
  t.is(st.action_enabled, false);
  t.is(st.mqtt_update, 'm1:0');
  t.is(st.mqtt_control, 'm1');
  t.is((await ok('state', { i: 'sensor:g/s' })).mqtt_update, null);
  await ok('set_prop', { i: 'unit:g/u', p: 'action_timeout' });
  t.is((await ok('state', { i: 'unit:g/u' })).action_timeout, null);
});

test('the functions are served at /lm-api/ for an lm controller, items in runtime/lm_items.json', async (t) => {
  const { client, dir } = await startItemsController(t, { product: 'lm' });
  const r = await client.get('create', { k: ItemKeys.master, i: 'lvar:plant/flag' }, {}, 'lm-api');
  t.is(r.status, 200);
  const u = await client.get('update', { k: ItemKeys.master, i: 'lvar:plant/flag', s: 1, v: 'on' }, {}, 'lm-api');
  t.deepEqual(u.body, { result: 'OK' });
  t.is((await client.get('state', { k: ItemKeys.master, i: 'lvar:plant/flag' }, {}, 'uc-api')).status, 404, 'no /uc-api/ on lm');
  t.truthy(readItemsState(`${dir}/runtime/lm_items.json`).items['lvar:plant/flag']);
});
