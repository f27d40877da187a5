import path from 'node:path';
import test from 'ava';
import { Keys } from '../helpers/controller';
import { until } from '../helpers/wait';
import { pgRows, postgresTests } from '../helpers/postgres';
import { readItemsState } from '../helpers/items-file';
import { CS } from '../helpers/corescripts';
import { grantElsewhere, health, longLeaseActive, startMember, SteadyLease, untilRole, type Member } from '../helpers/failover';

/**
 * `[cluster] failover`: the item definitions (create, destroy, set_prop)
 * follow the active controller through table eva_item, so a standby holds
 * the active one's items without a restart and a takeover has them all.
 * Real processes, one private PostgreSQL, through the HTTP server.
 */

const { pgtest, shared } = postgresTests(test);
const master = Keys.master;
const ops = Keys.ops;

const rpc = (url: string, method: string, params: Record<string, unknown>) => fetch(`${url}/jrpc`, {
  method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
}).then((r) => r.json() as Promise<{ result?: any; error?: { code: number; message: string } }>);

/** An items file with these items (status 0), as the documented format holds it. */
function itemsFile(oids: string[]): Record<string, string> {
  const items = Object.fromEntries(oids.map((o) => [o, { status: 0, value: null, t: 1, mqtt_update: '', mqtt_control: '', action_enabled: true, action_timeout: null }]));
  return { 'runtime/uc_items.json': JSON.stringify({ version: 1, journal: 0, items }) };
}

/** oid -> what `list` shows of an item's definition and state. */
async function defs(m: Member): Promise<Record<string, unknown>> {
  const r = await rpc(m.url, 'list', { k: master });
  const out: Record<string, unknown> = {};
  const all = (r.result ?? []) as Record<string, unknown>[];
  for (const i of all.sort((x, y) => String(x.oid).localeCompare(String(y.oid)))) {
    out[i.oid as string] = { value: i.value, action_enabled: i.action_enabled, action_timeout: i.action_timeout };
  }
  return out;
}

/** Time until `check` holds on the standby, polled: how long the standby lags, ms. */
async function lag(what: string, check: () => Promise<boolean>): Promise<number> {
  const t0 = performance.now();
  await until(what, check, 60_000);
  return performance.now() - t0;
}

pgtest('item definitions follow the active one: a fresh standby reads them at start, then create, set_prop and destroy appear on it; after SIGKILL the new active one has every item and property', async (t) => {
  t.timeout(300_000);
  const uri = await shared.database();
  // the first active one puts its items file in the table
  const a = await startMember(t, uri, 'a', SteadyLease, itemsFile(['sensor:seed/s']));
  await untilRole(a.url, 'active');
  await until('the items file in the table', async () => (await pgRows(uri, "SELECT oid FROM eva_item WHERE name = 'uc/testhost'")).length === 1);
  for (const i of ['sensor:def/s1', 'unit:def/u1', 'lvar:def/l1']) t.falsy((await rpc(a.url, 'create', { k: master, i })).error, i);
  t.falsy((await rpc(a.url, 'set_prop', { k: master, i: 'unit:def/u1', p: 'action_timeout', v: 7 })).error);
  t.falsy((await rpc(a.url, 'update', { k: ops, i: 'sensor:def/s1', s: 1, v: 'one' })).error);
  // a standby started with an items file of its own that the table does not have: the table wins
  const b = await startMember(t, uri, 'b', SteadyLease, itemsFile(['sensor:local/only']));
  await untilRole(b.url, 'standby');
  const want = await defs(a);
  t.deepEqual(Object.keys(want).sort(), ['lvar:def/l1', 'sensor:def/s1', 'sensor:seed/s', 'unit:def/u1']);
  await until('the standby to hold the active one\'s items', async () => JSON.stringify(await defs(b)) === JSON.stringify(want), 60_000)
    .catch(async (err: unknown) => { t.log(JSON.stringify(await defs(b))); throw err; });

  // changes on the active one, each seen on the standby without a restart
  const lags: number[] = [];
  t.falsy((await rpc(a.url, 'create', { k: master, i: 'sensor:def/s2' })).error);
  lags.push(await lag('the created item on the standby', async () => 'sensor:def/s2' in await defs(b)));
  t.falsy((await rpc(a.url, 'set_prop', { k: master, i: 'unit:def/u1', p: 'action_enabled', v: 0 })).error);
  lags.push(await lag('the property on the standby', async () => ((await defs(b))['unit:def/u1'] as { action_enabled?: boolean } | undefined)?.action_enabled === false));
  t.falsy((await rpc(a.url, 'destroy', { k: master, i: 'lvar:def/l1' })).error);
  lags.push(await lag('the destroyed item gone on the standby', async () => !('lvar:def/l1' in await defs(b))));
  t.falsy((await rpc(a.url, 'update', { k: ops, i: 'sensor:def/s2', s: 1, v: 'two' })).error);
  await until('the new item\'s state on the standby', async () => (await rpc(b.url, 'state', { k: master, i: 'sensor:def/s2' })).result?.value === 'two', 60_000);
  // the standby's items file has them too (written as its own changes are)
  await until('the standby\'s items file', () => {
    const { items } = readItemsState(path.join(b.dir, 'runtime', 'uc_items.json'));
    return Object.keys(items).sort().join() === 'sensor:def/s1,sensor:def/s2,sensor:seed/s,unit:def/u1' && items['unit:def/u1'].action_enabled === false;
  }, 60_000);

  const before = await defs(a);
  a.proc.kill('SIGKILL');
  await a.exited;
  await untilRole(b.url, 'active');
  t.deepEqual(await defs(b), before);
  t.falsy((await rpc(b.url, 'update', { k: ops, i: 'sensor:def/s2', v: 'after' })).error);
  t.falsy((await rpc(b.url, 'create', { k: master, i: 'sensor:def/s3' })).error);
  t.deepEqual((await pgRows(uri, "SELECT oid FROM eva_item WHERE name = 'uc/testhost' ORDER BY oid")).map((r) => r.oid),
    ['sensor:def/s1', 'sensor:def/s2', 'sensor:def/s3', 'sensor:seed/s', 'unit:def/u1']);
  t.log(`the standby holds the active one's change after (ms, polled): create ${lags[0].toFixed(0)}, set_prop ${lags[1].toFixed(0)}, destroy ${lags[2].toFixed(0)}`);
});

pgtest('a definition change carrying an old lease token changes nothing, in the table or here: the caller gets 5 and the controller stands by', async (t) => {
  t.timeout(120_000);
  const uri = await shared.database();
  const { c: a } = await longLeaseActive(t, uri);
  t.falsy((await a.client.rpc('create', { k: master, i: 'unit:fence/u' })).error);
  await grantElsewhere(uri);
  const r = await a.client.rpc('create', { k: master, i: 'sensor:fence/s' });
  t.is(r.error?.code, 5, JSON.stringify(r));
  t.regex(r.error!.message, /standby/);
  t.is((await health(a.url)).role, 'standby');
  t.deepEqual((await pgRows(uri, 'SELECT oid FROM eva_item')).map((x) => x.oid), ['unit:fence/u']);
  t.deepEqual(((await a.client.rpc('list', { k: master })).result as { oid: string }[]).map((i) => i.oid), ['unit:fence/u']);
});

pgtest('a change without a function call (a core script\'s items.update, called through its cs_ method) does not land on a standby: refused there, the item and the table keep the active one\'s state', async (t) => {
  t.timeout(300_000);
  const uri = await shared.database();
  const script = `rpc('poke', () => {
  try { items.update('sensor:cs/s', { status: 1, value: 'poked' }); return 'changed'; } catch (e) { return 'refused: ' + e.message; }
}, { permission: 'any' });`;
  const files = { [`${CS}/a.js`]: script };
  const a = await startMember(t, uri, 'a', SteadyLease, files);
  await untilRole(a.url, 'active');
  t.falsy((await rpc(a.url, 'create', { k: master, i: 'sensor:cs/s' })).error);
  t.falsy((await rpc(a.url, 'update', { k: ops, i: 'sensor:cs/s', s: 1, v: 'active' })).error);
  const b = await startMember(t, uri, 'b', SteadyLease, files);
  await untilRole(b.url, 'standby');
  await until('the standby to hold the item and its state', async () => (await rpc(b.url, 'state', { k: master, i: 'sensor:cs/s' })).result?.value === 'active', 60_000);
  const poke = async (url: string) => (await until('the script loaded', async () => (await rpc(url, 'cs_poke', { k: master })).result as string | undefined));
  t.regex(await poke(b.url), /^refused: .*standby/);
  t.is((await rpc(b.url, 'state', { k: master, i: 'sensor:cs/s' })).result?.value, 'active');
  t.deepEqual(await pgRows(uri, "SELECT value FROM state WHERE id = 'cs/s'"), [{ value: 'active' }]);
  // the same script on the active one changes the item
  t.is(await poke(a.url), 'changed');
  await until('the standby to follow the active one\'s change', async () => (await rpc(b.url, 'state', { k: master, i: 'sensor:cs/s' })).result?.value === 'poked', 60_000);
});

pgtest('the first active one puts its items file in the table and a standby that started before takes those items, without a restart', async (t) => {
  t.timeout(300_000);
  const uri = await shared.database();
  // a lease held elsewhere for a while: both start as standbys, each with its own items file, before any is in the table
  await pgRows(uri, `CREATE TABLE IF NOT EXISTS eva_lease (name VARCHAR(256) PRIMARY KEY, holder VARCHAR(256) NOT NULL, token BIGINT NOT NULL, expires TIMESTAMPTZ NOT NULL);
    INSERT INTO eva_lease VALUES ('uc/testhost', 'elsewhere', 1, now() + interval '10 minutes')`);
  const [a, b] = await Promise.all([startMember(t, uri, 'a', {}, itemsFile(['sensor:f/a'])), startMember(t, uri, 'b', {}, itemsFile(['sensor:f/b']))]);
  await Promise.all([untilRole(a.url, 'standby'), untilRole(b.url, 'standby')]);
  t.deepEqual((await pgRows(uri, 'SELECT count(*)::int AS n FROM eva_item_set')), [{ n: 0 }]);
  // the lease runs out: one of them takes it
  await pgRows(uri, "UPDATE eva_lease SET expires = now() WHERE name = 'uc/testhost'");
  const active = await until('one of them active', async () => {
    for (const m of [a, b]) if ((await health(m.url)).role === 'active') return m;
    return undefined;
  }, 60_000);
  const standby = active === a ? b : a;
  const own = active === a ? 'sensor:f/a' : 'sensor:f/b';
  await until('the first active one\'s items in the table', async () => (await pgRows(uri, 'SELECT oid FROM eva_item')).map((r) => r.oid).join() === own, 60_000);
  await until('the standby to hold them', async () => Object.keys(await defs(standby)).join() === own, 60_000);
});
