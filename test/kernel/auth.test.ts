import fs from 'node:fs';
import test from 'ava';
import { startController, Keys, Client } from '../helpers/controller';
import { ECHO_PLUGIN } from '../helpers/echo-plugin';
import { keysIni } from '../helpers/keys';

const files = { 'plugins/echo.js': ECHO_PLUGIN };

const V6 = 'v6onlyv6onlyv6onlyv6onlyv6onlyv6onlyv6onlyv6onlyv6onlyv6onlyv6o1';
const V4 = 'v4onlyv4onlyv4onlyv4onlyv4onlyv4onlyv4onlyv4onlyv4onlyv4onlyv4o1';
const FAR = 'farawayfarawayfarawayfarawayfarawayfarawayfarawayfarawayfaraway1';
const NOWHERE = 'nowherenowherenowherenowherenowherenowherenowherenowherenowhere1';

const KEYS_INI = keysIni({
  masterkey: { key: Keys.master, master: true, hosts_allow: ['127.0.0.1', '::1'] },
  ops: { key: Keys.ops, sysfunc: true, allow: ['cmd', 'lock'], groups: ['g1', 'g2'], items: 'sensor:g1/t1', hosts_allow: '127.0.0.0/8' },
  v6only: { key: V6, hosts_allow: '::1/128' },
  v4only: { key: V4, hosts_allow: '127.0.0.1' },
  faraway: { key: FAR, hosts_allow: ['10.0.0.0/8', 'fd00::/8'] },
  nowhere: { key: NOWHERE },
  assigned: { key: 'assignedassignedassignedassignedassignedassignedassignedassigned', hosts_allow: '127.0.0.1', hosts_assign: '127.0.0.1' },
  nokey: { master: true },
});

test('the key may come in k, in X-Auth-Key, or from hosts_assign', async (t) => {
  const { client } = await startController(t, { keysIni: KEYS_INI, files });
  t.is((await client.get('echo', { k: Keys.ops, s: 'a' })).body.key_id, 'ops');
  t.is((await client.get('echo', { s: 'a' }, { 'X-Auth-Key': Keys.ops })).body.key_id, 'ops');
  t.is((await client.rpc('echo', { s: 'a' }, { 'X-Auth-Key': Keys.ops })).result.key_id, 'ops');
  // no key at all: the address 127.0.0.1 is assigned a key
  t.is((await client.get('echo', { s: 'a' })).body.key_id, 'assigned');
  t.is((await client.rpc('echo', { s: 'a' })).result.key_id, 'assigned');
  // k wins over the header
  t.is((await client.get('echo', { k: Keys.master, s: 'a' }, { 'X-Auth-Key': Keys.ops })).body.key_id, 'masterkey');
});

test('unknown keys, and no key without hosts_assign, are denied (403 / 2)', async (t) => {
  const { client } = await startController(t, { files });
  for (const k of ['wrong', Keys.master.slice(0, -1), Keys.master + 'x', '']) {
    const d = await client.get('test', k ? { k } : {});
    t.is(d.status, 403, k);
    t.deepEqual(d.body.result, 'ERROR');
    t.is((await client.rpc('test', k ? { k } : {})).error!.code, 2);
  }
});

test('hosts_allow is enforced for IPv4 clients', async (t) => {
  const { client, dir } = await startController(t, { keysIni: KEYS_INI, files });
  t.is((await client.get('test', { k: V4 })).status, 200);
  t.is((await client.get('test', { k: FAR })).status, 403);
  t.is((await client.get('test', { k: V6 })).status, 403);
  // a static key without hosts_allow is usable from nowhere, as in 3.3
  t.is((await client.get('test', { k: NOWHERE })).status, 403);
  // a section without `key` is skipped with a warning
  t.regex(fs.readFileSync(`${dir}/controller.log`, 'utf8'), /key nokey .* has no "key" field/);
});

test('hosts_allow is enforced for IPv6 clients', async (t) => {
  const { port } = await startController(t, { keysIni: KEYS_INI, files, ini: { webapi: { listen: '[::1]:0' } } });
  const v6 = new Client(`http://[::1]:${port}`);
  t.is((await v6.get('test', { k: V6 })).status, 200);
  t.is((await v6.get('test', { k: V4 })).status, 403);
  t.is((await v6.rpc('test', { k: FAR })).error!.code, 2);
  t.is((await v6.get('test', { k: Keys.master })).status, 200);
});

test('X-Real-IP is honoured only when [webapi] x_real_ip is set', async (t) => {
  const off = await startController(t, { keysIni: KEYS_INI, files });
  t.is((await off.client.get('test', { k: V4 }, { 'X-Real-IP': '10.1.2.3' })).status, 200);
  t.is((await off.client.get('test', { k: FAR }, { 'X-Real-IP': '10.1.2.3' })).status, 403);
  const on = await startController(t, { keysIni: KEYS_INI, files, ini: { webapi: { x_real_ip: 'yes' } } });
  t.is((await on.client.get('test', { k: V4 }, { 'X-Real-IP': '10.1.2.3' })).status, 403);
  t.is((await on.client.get('test', { k: FAR }, { 'X-Real-IP': '10.1.2.3' })).status, 200);
  t.is((await on.client.get('test', { k: V6 }, { 'X-Real-IP': '::1' })).status, 200);
});

test('permission levels: master, sysfunc, allow=cmd/lock/device', async (t) => {
  const { client } = await startController(t, { files });
  const expect: Record<string, Record<string, boolean>> = {
    master: { master: true, sysfunc: true, cmd: true, lock: true, device: true },
    ops: { master: false, sysfunc: true, cmd: true, lock: true, device: true },
    plain: { master: false, sysfunc: false, cmd: false, lock: false, device: false },
  };
  for (const [who, perms] of Object.entries(expect)) {
    const k = Keys[who as keyof typeof Keys];
    for (const [perm, allowed] of Object.entries(perms)) {
      const d = await client.get(`need_${perm}`, { k });
      t.is(d.status, allowed ? 200 : 403, `${who} ${perm}`);
      const r = await client.rpc(`need_${perm}`, { k });
      t.is(r.error?.code, allowed ? undefined : 2, `${who} ${perm}`);
    }
  }
});

test('test: every system info field; acl and the sysfunc/master-only fields by key', async (t) => {
  const { client } = await startController(t, { keysIni: KEYS_INI, files, ini: { server: { layout: 'simple', polldelay: 0.1 } } });
  const m = (await client.get('test', { k: Keys.master })).body;
  for (const f of ['acl', 'db_update', 'debug', 'file_management', 'layout', 'polldelay', 'product_build', 'product_code',
    'product_name', 'result', 'setup_mode', 'system', 'time', 'uptime', 'version']) t.true(f in m, f);
  // the fields 3.3 adds: the caller, the controller, the log level; cdata in the master's acl too
  t.deepEqual(m.acl, { key_id: 'masterkey', master: true, cdata: [] });
  t.deepEqual(m.aci, { key_id: 'masterkey' });
  t.is(m.controller, 'uc/testhost');
  t.is(m.log_level, 20);
  t.is(m.system, 'testhost');
  t.is(m.layout, 'simple');
  t.is(m.polldelay, 0.1);
  t.is(m.db_update, 1);
  t.is(m.product_code, 'uc');
  t.true(Math.abs(m.time - Date.now() / 1000) < 5);
  t.true(Number.isInteger(m.uptime));
  t.true(Number.isInteger(m.product_build));
  for (const f of ['debug', 'setup_mode', 'file_management']) t.is(typeof m[f], 'boolean', f);
  for (const f of ['product_name', 'version']) t.is(typeof m[f], 'string', f);
  t.is(m.result, 'OK');

  const ops = (await client.get('test', { k: Keys.ops })).body;
  t.is(ops.acl.key_id, 'ops');
  t.false(ops.acl.master);
  t.deepEqual(ops.acl.allow, { cmd: true, device: false, lock: true });
  t.deepEqual(ops.acl.groups, ['g1', 'g2']);
  t.deepEqual(ops.acl.items, ['sensor:g1/t1']);
  // sysfunc: every sysfunc field, but file_management is for master only
  for (const f of ['db_update', 'debug', 'setup_mode', 'polldelay']) t.true(f in ops, f);
  t.false('file_management' in ops);

  const plain = (await client.get('test', { k: V4 })).body;
  for (const f of ['db_update', 'debug', 'setup_mode', 'polldelay', 'file_management']) t.false(f in plain, f);
  const rpc = await client.rpc('test', { k: V4 });
  t.is(rpc.result.ok, true);
  t.false('result' in rpc.result);
});
