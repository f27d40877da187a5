import test, { type ExecutionContext } from 'ava';
import { startController, Keys, type Running } from '../helpers/controller';
import { keysIni } from '../helpers/keys';
import { notifierFiles, stateEvent, stats } from '../helpers/notifiers';
import { until } from '../helpers/wait';
import { postgresUnavailable, sharedPostgres } from '../helpers/postgres';
import { skipWhen } from '../helpers/tools';

/**
 * The history API (state_history, state_log) against every history backend:
 * the same test body runs once per backend below. A backend is a setup
 * function giving the `db` value of the db notifier.
 */

const pg = sharedPostgres();
test.after.always(() => pg.stop());

interface Backend { name: string; skip?: string; db(t: ExecutionContext): Promise<string> }

const Backends: Backend[] = [
  { name: 'postgresql', skip: postgresUnavailable(), db: () => pg.database() },
  { name: 'sql.js', db: async () => 'history.db' },
];

const KEYS_INI = keysIni({
  masterkey: { key: Keys.master, master: true, hosts_allow: '127.0.0.1' },
  env: { key: 'envenvenvenvenvenvenvenvenvenvenvenvenvenvenvenvenvenvenvenvenv1', groups: 'env/#', hosts_allow: '127.0.0.1' },
  one: { key: 'oneoneoneoneoneoneoneoneoneoneoneoneoneoneoneoneoneoneoneoneone1', items: 'sensor:env/t1', hosts_allow: '127.0.0.1' },
  flat: { key: 'flatflatflatflatflatflatflatflatflatflatflatflatflatflatflatflat', groups: 'env', hosts_allow: '127.0.0.1' },
  denied: { key: 'deniedenieddeniedenieddeniedenieddeniedenieddeniedenieddenied12', groups: '#', items_deny: 'sensor:env/t2', hosts_allow: '127.0.0.1' },
});
const K = {
  env: 'envenvenvenvenvenvenvenvenvenvenvenvenvenvenvenvenvenvenvenvenv1',
  one: 'oneoneoneoneoneoneoneoneoneoneoneoneoneoneoneoneoneoneoneoneone1',
  denied: 'deniedenieddeniedenieddeniedenieddeniedenieddeniedenieddenied12',
  flat: 'flatflatflatflatflatflatflatflatflatflatflatflatflatflatflatflat',
};

/** An hour ago, on a 5-minute boundary: the fill intervals start at B. */
const B = Math.floor(Date.now() / 1000 / 300) * 300 - 3600;

/** The stored history every test reads (t, oid, status, value). */
const ROWS: [number, string, number, string | null][] = [
  [B + 10, 'sensor:env/t1', 1, '10'],
  [B + 20, 'sensor:env/t1', 1, '20'],
  [B + 30, 'sensor:env/t1', 1, '20'], // repeats the record before it
  [B + 610, 'sensor:env/t1', 1, '40'],
  [B + 310, 'sensor:env/t2', 1, '5'],
  [B + 400, 'sensor:env/sub/t3', 0, 'text'],
  [B + 100, 'sensor:other/x', 1, '1'],
];

async function controllerWith(t: ExecutionContext, backend: Backend): Promise<Running> {
  const db = await backend.db(t);
  const r = await startController(t, {
    keysIni: KEYS_INI,
    files: notifierFiles({ db_1: { type: 'db', db, keep: 86400, events: [{ subject: 'state', types: ['#'], groups: ['#'] }] } }),
  });
  const events = ROWS.map(([tt, oid, status, value]) => ({ ...stateEvent(oid, status, value), t: tt }));
  await r.client.ok('t_emit', { k: Keys.master, s: 'state', d: events });
  await until('history written', async () => (await stats(r.client, Keys.master, 'db_1')).sent >= ROWS.length, 20_000);
  return r;
}

const ok = async (r: Running, method: string, params: Record<string, unknown>) => {
  const res = await r.client.rpc(method, { k: Keys.master, ...params });
  if (res.error) throw new Error(`${method}: ${res.error.code} ${res.error.message}`);
  return res.result;
};

for (const backend of Backends) {
  const bt = skipWhen(backend.skip);
  const name = (s: string) => `${backend.name}: ${s}`;

  bt(name('state_history: raw records as 3.3 shaped them (list, dict, x, l, s, t=iso)'), async (t) => {
    const r = await controllerWith(t, backend);
    const all = await ok(r, 'state_history', { i: 'sensor:env/t1', s: B, e: B + 900 });
    t.deepEqual(all, { t: [B + 10, B + 20, B + 610], status: [1, 1, 1], value: [10, 20, 40] }, 'a repeated record is left out');
    t.deepEqual(await ok(r, 'state_history', { i: 'sensor:env/t1', s: B, e: B + 900, x: 'value', g: 'dict' }),
      [{ t: B + 10, value: 10 }, { t: B + 20, value: 20 }, { t: B + 610, value: 40 }]);
    const last2 = await ok(r, 'state_history', { i: ['sensor:env/t1'], l: 2, x: 'status' });
    t.deepEqual(last2.status, [1], 'records repeating the asked property are left out');
    t.is(last2.value, undefined);
    t.deepEqual((await ok(r, 'state_history', { i: 'sensor:env/t1', l: 2, x: 'value' })).value, [20, 40]);
    // a start time between records: the state then comes first, at the start time
    t.deepEqual(await ok(r, 'state_history', { i: 'sensor:env/t1', s: B + 15, e: B + 900 }), { t: [B + 15, B + 20, B + 610], status: [1, 1, 1], value: [10, 20, 40] });
    const iso = await ok(r, 'state_history', { i: 'sensor:env/t1', s: B, e: B + 900, t: 'iso' });
    t.regex(iso.t[0], /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[+-]\d{2}:\d{2}$/);
    t.is(Date.parse(iso.t[0]) / 1000, B + 10);
    // ISO and relative times are read
    t.is((await ok(r, 'state_history', { i: 'sensor:env/t1', s: new Date((B + 15) * 1000).toISOString(), e: B + 900 })).t[0], B + 15);
    t.deepEqual((await ok(r, 'state_history', { i: 'sensor:env/t1', s: '2H' })).value, [10, 20, 40]);
    const recent = await ok(r, 'state_history', { i: 'sensor:env/t1', s: '10T' });
    t.deepEqual(recent.value, [40], 'no record in the last 10 minutes: the state at the start');
    t.true(Math.abs(recent.t[0] - (Date.now() / 1000 - 600)) < 60);
    // non-numeric values stay text
    t.deepEqual((await ok(r, 'state_history', { i: 'sensor:env/sub/t3', s: B })).value, ['text']);
  });

  bt(name('state_history: fill w=5T with means, pad, digits, SI prefix, several items, chart'), async (t) => {
    const r = await controllerWith(t, backend);
    const f = await ok(r, 'state_history', { i: 'sensor:env/t1', s: B, e: B + 900, w: '5T' });
    t.deepEqual(f.t, [B, B + 300, B + 600, B + 900]);
    t.deepEqual(f.status, [1, 1, 1, 1]);
    t.is(f.value.length, 4);
    t.true(Math.abs(f.value[0] - 50 / 3) < 1e-9, 'the mean of the interval');
    t.deepEqual(f.value.slice(1), [20, 40, 40], 'an empty interval takes the state before it; repeated up to e');
    t.deepEqual((await ok(r, 'state_history', { i: 'sensor:env/t1', s: B, e: B + 900, w: '5T:2', x: 'value' })).value, [16.66, 20, 40, 40]);
    t.deepEqual((await ok(r, 'state_history', { i: 'sensor:env/t1', s: B, e: B + 900, w: '5T:k:3', x: 'value' })).value, [0.016, 0.02, 0.04, 0.04]);
    t.deepEqual((await ok(r, 'state_history', { i: 'sensor:env/t1', s: B, e: B + 900, w: '5T', l: 2, x: 'value' })).value, [40, 40]);
    const h = await ok(r, 'state_history', { i: 'sensor:env/t1', s: B, e: B + 900, w: '1H', x: 'value', t: 'iso' });
    t.is(typeof h.t[0], 'string');
    // several items: one table over shared times
    const m = await ok(r, 'state_history', { i: 'sensor:env/t1,sensor:env/t2', s: B, e: B + 900, w: '5T', x: 'value' });
    t.deepEqual(m.t, [B, B + 300, B + 600, B + 900]);
    t.deepEqual(m['sensor:env/t2/value'], [null, 5, 5, 5]);
    t.is(m['sensor:env/t1/value'][2], 40);
    const bad = await r.client.rpc('state_history', { k: Keys.master, i: 'sensor:env/t1,sensor:env/t2' });
    t.is(bad.error?.code, 11, 'several items need w');
    // chart: JSON RPC answers content_type and data
    const c = await ok(r, 'state_history', { i: 'sensor:env/t1', s: B, e: B + 900, w: '5T', g: 'chart' });
    t.is(c.content_type, 'image/svg+xml');
    t.regex(c.data, /^<svg [^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg".*<polyline .*<\/svg>$/s);
    const direct = await r.client.get('state_history', { k: Keys.master, i: 'sensor:env/t1', w: '5T', s: B, g: 'chart' }, {}, 'uc-api');
    t.is(direct.status, 200);
    t.is(direct.body.content_type, 'image/svg+xml');
  });

  bt(name('state_log: raw records of an oid or a mask, in time order'), async (t) => {
    const r = await controllerWith(t, backend);
    const log = await ok(r, 'state_log', { i: 'sensor:env/#', s: B });
    t.deepEqual(log.map((x: any) => [x.t, x.oid, x.value]), [
      [B + 10, 'sensor:env/t1', 10], [B + 20, 'sensor:env/t1', 20], [B + 310, 'sensor:env/t2', 5],
      [B + 400, 'sensor:env/sub/t3', 'text'], [B + 610, 'sensor:env/t1', 40],
    ]);
    t.deepEqual(log[0], { oid: 'sensor:env/t1', t: B + 10, status: 1, value: 10 });
    t.is((await ok(r, 'state_log', { i: 'sensor:#' })).length, 6, 'every sensor: the mask of a type');
    t.deepEqual((await ok(r, 'state_log', { i: 'sensor:env/t1', l: 1 })).map((x: any) => x.t), [B + 610]);
    t.deepEqual((await ok(r, 'state_log', { i: 'sensor:env/t1', s: B + 15, e: B + 600 })).map((x: any) => x.t), [B + 20]);
    t.deepEqual(await ok(r, 'state_log', { i: 'sensor:env/t1', l: 0 }), []);
    const iso = await ok(r, 'state_log', { i: 'sensor:env/t2', t: 'iso' });
    t.is(Date.parse(iso[0].t) / 1000, B + 310);
  });

  bt(name('a key sees only its items; masks need the mask\'s group and answer only readable items; bad input is refused'), async (t) => {
    const r = await controllerWith(t, backend);
    const call = (k: string, method: string, params: Record<string, unknown>) => r.client.rpc(method, { k, ...params });
    // groups = env/#: the group and its masks
    t.is((await call(K.env, 'state_log', { i: 'sensor:env/#' })).result.length, 5);
    t.is((await call(K.env, 'state_log', { i: 'sensor:env/sub/#' })).result.length, 1);
    t.is((await call(K.env, 'state_log', { i: 'sensor:other/#' })).error?.code, 2);
    t.is((await call(K.env, 'state_log', { i: 'sensor:#' })).error?.code, 2, 'a type mask needs every group');
    t.is((await call(K.env, 'state_history', { i: 'sensor:other/x' })).error?.code, 2);
    // one item: that item, no mask
    t.is((await call(K.one, 'state_history', { i: 'sensor:env/t1' })).result.value.length, 3);
    t.is((await call(K.one, 'state_log', { i: 'sensor:env/t1' })).result.length, 3);
    t.is((await call(K.one, 'state_log', { i: 'sensor:env/#' })).error?.code, 2);
    t.is((await call(K.one, 'state_history', { i: 'sensor:env/t1,sensor:env/t2', w: '5T' })).error?.code, 2);
    // groups = # but one item denied: that item, and any mask over it, are refused
    t.is((await call(K.denied, 'state_history', { i: 'sensor:env/t2' })).error?.code, 2);
    // a mask over it: the group's records the key may read, as 3.3 answers a key that has the group (without the denied item)
    t.deepEqual([...new Set((await call(K.denied, 'state_log', { i: 'sensor:env/#' })).result.map((x: any) => x.oid))], ['sensor:env/t1', 'sensor:env/sub/t3']);
    // groups = env (the group itself, not below): the mask of env is answered with env's own items only
    t.deepEqual([...new Set((await call(K.flat, 'state_log', { i: 'sensor:env/#' })).result.map((x: any) => x.oid))].sort(), ['sensor:env/t1', 'sensor:env/t2']);
    t.is((await call(K.flat, 'state_log', { i: 'sensor:env/sub/#' })).error?.code, 2, 'a group below is not the key\'s');
    t.is((await call(K.flat, 'state_log', { i: 'sensor:#' })).error?.code, 2);
    t.is((await call(K.denied, 'state_log', { i: 'sensor:other/#' })).result.length, 1);
    // malformed masks, oids, times, formats: invalid_params, never SQL
    for (const i of ["sensor:env/'; DROP TABLE state_history; --/#", 'sensor:env/+/t1', 'sensor:#/x', 'sensor:env/t%', 'nonsense']) {
      const res = await r.client.rpc('state_log', { k: Keys.master, i });
      t.is(res.error?.code, 11, i);
    }
    t.is((await r.client.rpc('state_history', { k: Keys.master, i: 'sensor:env/t1', s: 'yesterday' })).error?.code, 11);
    t.is((await r.client.rpc('state_history', { k: Keys.master, i: 'sensor:env/t1', w: '5X' })).error?.code, 11);
    t.is((await r.client.rpc('state_history', { k: Keys.master, i: 'sensor:env/t1', w: '5T:q:2' })).error?.code, 11);
    t.is((await r.client.rpc('state_history', { k: Keys.master, i: 'sensor:env/t1', g: 'png' })).error?.code, 11);
    t.is((await r.client.rpc('state_history', { k: Keys.master, i: 'sensor:env/t1', x: 'both' })).error?.code, 11);
    t.is((await r.client.rpc('state_history', { k: Keys.master, i: 'sensor:env/t1', t: 'unix' })).error?.code, 11);
    const missing = await r.client.get('state_history', { k: Keys.master, i: 'sensor:env/t1', a: 'db_9' }, {}, 'uc-api');
    t.is(missing.status, 404);
    // still all there
    t.is((await ok(r, 'state_log', { i: 'sensor:#' })).length, 6);
  });
}
