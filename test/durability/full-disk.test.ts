import test from 'ava';
import fs from 'node:fs';
import path from 'node:path';
import { makeDir, startController, spawnController, Keys, type Client } from '../helpers/controller';
import { readItemsState } from '../helpers/items-file';
import { fill, mountSmall, root } from '../helpers/small-disk';
import { Dispatcher } from '../../core/dispatch';
import type { ApiError } from '../../core/errors';
import { skipWhen } from '../helpers/tools';

const k = Keys.master;

/** What the controller holds: key ids, user names, cvars. */
async function state(client: Client) {
  return {
    keys: (await client.ok('list_keys', { k })).map((x: any) => x.key_id).sort(),
    users: (await client.ok('list_users', { k })).map((x: any) => x.user).sort(),
    cvars: await client.ok('get_cvar', { k }),
  };
}

const skipIfNotRoot = skipWhen(!root && 'mounting a small tmpfs needs root');

skipIfNotRoot('on a full disk, create_key, create_user and set_cvar answer an error and leave no trace, in memory or on disk', async (t) => {
  const base = makeDir(t, { ini: { server: { db_update: 'instant' } } });
  const dir = path.join(base, 'mnt');
  mountSmall(t, dir, '1m');
  // the controller lives on the small file system; its log stays outside (makeDir put it in base)
  fs.cpSync(path.join(base, 'etc'), path.join(dir, 'etc'), { recursive: true });

  let ctl = await startController(t, { dir });
  await ctl.client.ok('create_key', { k, i: 'k1' });
  await ctl.client.ok('create_user', { k, u: 'u1', p: 'secret-one', a: 'k1' });
  await ctl.client.ok('set_cvar', { k, i: 'c1', v: 'one' });
  const before = await state(ctl.client);
  t.deepEqual(before.users, ['u1']);
  t.true(before.keys.includes('k1'));
  t.deepEqual(before.cvars, { c1: 'one' });
  const files = () => fs.readdirSync(path.join(dir, 'runtime'), { recursive: true }).map(String).sort();
  const filesBefore = files();

  const filler = fill(dir);
  for (const [fn, p] of [
    ['create_key', { i: 'k2' }],
    ['create_user', { u: 'u2', p: 'secret-two', a: 'k1' }],
    ['set_cvar', { i: 'c2', v: 'two' }],
    ['set_cvar', { i: 'c1', v: 'changed' }],
  ] as const) {
    const r = await ctl.client.rpc(fn, { k, ...p });
    t.is(r.error?.code, 10, `${fn} ${JSON.stringify(p)}: ${JSON.stringify(r)}`);
    const direct = await ctl.client.post(fn, { k, ...p });
    t.is(direct.status, 500, `${fn} direct`);
  }
  // nothing of the failed calls is in memory
  t.deepEqual(await state(ctl.client), before);
  t.deepEqual(files(), filesBefore, 'no temp file is left behind');

  // space again: a later write must not carry the failed changes either
  fs.rmSync(filler);
  await ctl.client.ok('set_cvar', { k, i: 'c3', v: 'three' });
  await ctl.client.ok('create_key', { k, i: 'k3' });
  await ctl.client.ok('create_user', { k, u: 'u3', p: 'secret-three', a: 'k3' });
  await ctl.stop();

  ctl = await startController(t, { dir });
  const after = await state(ctl.client);
  t.deepEqual(after.users, ['u1', 'u3']);
  t.deepEqual(after.keys, [...before.keys, 'k3'].sort());
  t.deepEqual(after.cvars, { c1: 'one', c3: 'three' });
  await ctl.stop();
});

skipIfNotRoot('on a full disk, an update under db_update instant answers an error once its journal write fails; the change is made and the next write carries it', async (t) => {
  const base = makeDir(t, { ini: { server: { db_update: 'instant' } } });
  const dir = path.join(base, 'mnt');
  mountSmall(t, dir, '1m');
  fs.cpSync(path.join(base, 'etc'), path.join(dir, 'etc'), { recursive: true });
  const child = await spawnController(t, dir);
  const c = child.client;
  await c.ok('create', { k, i: 'sensor:g/a' });
  await c.ok('create', { k, i: 'sensor:g/b' });

  const filler = fill(dir);
  // longer than a page: the journal's last page has room for a short record even on a full tmpfs
  const long = 'while full '.repeat(1000);
  const r = await c.rpc('update', { k, i: 'sensor:g/a', s: 1, v: long });
  t.is(r.error?.code, 10, JSON.stringify(r));
  t.regex(r.error!.message, /the change is made but .*uc_items\.json could not be written .*ENOSPC/);
  t.is((await c.ok('state', { k, i: 'sensor:g/a' })).value, long, 'the change is made');

  fs.rmSync(filler);
  await c.ok('update', { k, i: 'sensor:g/b', s: 1, v: 'later' });
  // killed: what the journal holds is all a restart has
  child.proc.kill('SIGKILL');
  await child.exited;
  const ctl = await startController(t, { dir });
  t.is((await ctl.client.ok('state', { k, i: 'sensor:g/a' })).value, long, 'the next write carried the failed change');
  t.is((await ctl.client.ok('state', { k, i: 'sensor:g/b' })).value, 'later');
  await ctl.stop();
});

skipIfNotRoot('on a full disk, a failed items journal write answers error 10 to exactly its own callers, alone or in a batch; the writes after carry its changes', async (t) => {
  // one state per write, so that each caller has a write of its own
  const base = makeDir(t, { ini: { server: { db_update: 'instant', items_write_max: 1 } } });
  const dir = path.join(base, 'mnt');
  mountSmall(t, dir, '1m');
  fs.cpSync(path.join(base, 'etc'), path.join(dir, 'etc'), { recursive: true });
  const ctl = await startController(t, { dir });
  const c = ctl.client;
  await c.ok('create', { k, i: 'sensor:g/a' });
  await c.ok('create', { k, i: 'sensor:g/b' });
  const d = ctl.ctl.get(Dispatcher);
  const meta = { ip: '127.0.0.1', transport: 'test', headers: {} };
  const settled = (p: unknown) => (p as Promise<unknown>).then(() => 'ok', (err: ApiError) => err.code);

  const filler = fill(dir);
  // longer than a page: it cannot be written; a short state still fits in the journal's last page
  const long = 'while full '.repeat(1000);
  const a = settled(d.call('update', { k, i: 'sensor:g/a', v: long }, meta));
  for (let n = 0; n < 10; n++) await Promise.resolve(); // a's write is under way: b waits for the next one
  const b = settled(d.call('update', { k, i: 'sensor:g/b', v: 'short' }, meta));
  t.deepEqual([await a, await b], [10, 'ok'], 'the failed write told its own caller only');
  t.is(readItemsState(path.join(dir, 'runtime', 'uc_items.json')).items['sensor:g/b'].value, 'short');

  // a batch: each update is answered by the write that carried it
  const r = await fetch(`${ctl.url}/jrpc`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify([
    { jsonrpc: '2.0', method: 'update', params: { k, i: 'sensor:g/a', v: `${long}2` }, id: 1 },
    { jsonrpc: '2.0', method: 'update', params: { k, i: 'sensor:g/b', v: 'short2' }, id: 2 },
  ]) });
  const out = await r.json() as { id: number; result?: unknown; error?: { code: number; message: string } }[];
  t.deepEqual(out.map((x) => x.id), [1, 2]);
  t.is(out[0].error?.code, 10, JSON.stringify(out[0]));
  t.regex(out[0].error!.message, /the change is made but .*uc_items\.json could not be written .*ENOSPC/);
  t.deepEqual(out[1].result, { ok: true });
  t.is((await c.ok('state', { k, i: 'sensor:g/a' })).value, `${long}2`, 'the change is made');

  fs.rmSync(filler);
  await c.ok('update', { k, i: 'sensor:g/b', v: 'later' });
  const disk = readItemsState(path.join(dir, 'runtime', 'uc_items.json')).items;
  t.is(disk['sensor:g/a'].value, `${long}2`, 'the write after carried the failed change');
  t.is(disk['sensor:g/b'].value, 'later');
});
