import test, { type ExecutionContext } from 'ava';
import { startController, Keys, type Running } from '../helpers/controller';
import { until } from '../helpers/wait';
import { pgRows, postgresTests, startPostgres } from '../helpers/postgres';

/**
 * The API call log with `[server] userdb`: table api_log of the database
 * the controllers share (EVA ICS 3.3.2's columns), so each controller's
 * api_log_get sees the fleet's calls; rows go in batches and wait, bounded,
 * while PostgreSQL is away.
 */

const { pgtest, shared } = postgresTests(test);

const rows = pgRows;

const controller = (t: ExecutionContext, userdb: string, server: Record<string, string | number> = {}): Promise<Running> =>
  startController(t, { ini: { server: { userdb, keep_api_log: 3600, ...server } } });

type Health = { userdb: { connected: boolean; apilog?: { waiting: number; dropped: number; written: number } } };
const health = async (r: Running) => ((await (await fetch(`${r.url}/health`)).json()) as Health).userdb;

pgtest('calls made on one controller are in api_log_get of the other, in 3.3.2\'s table api_log', async (t) => {
  const uri = await shared.database();
  const a = await controller(t, uri);
  const b = await controller(t, uri);
  await a.client.ok('set_cvar', { k: Keys.master, i: 'from_a', v: '1' });
  await a.client.rpc('test', { k: Keys.ops });
  await b.client.rpc('get_cvar', { k: Keys.master, i: 'nope' });
  // the fleet's log on either controller, filtered as the own one: each sees both
  for (const r of [a, b]) {
    const got = await until('both controllers\' calls', async () => {
      const l = (await r.client.ok('api_log_get', { k: Keys.master, f: { func: ['set_cvar', 'test', 'get_cvar'] } })) as any[];
      return l.length === 3 ? l : undefined;
    });
    t.deepEqual(got.map((x) => [x.func, x.ki, x.status]), [['set_cvar', 'masterkey', 'OK'], ['test', 'ops', 'OK'], ['get_cvar', 'masterkey', 'ResourceNotFound']]);
    t.like(got[0], { gw: 'http', ip: '127.0.0.1', auth: 'key', u: null, utp: null, params: '{"i":"from_a","v":"1"}' });
    t.is(typeof got[0].t, 'number');
    t.true(got[0].tf >= got[0].t);
  }
  // a key sees its own records only, on the other controller too
  const own = (await b.client.ok('api_log_get', { k: Keys.ops })) as any[];
  t.deepEqual([...new Set(own.map((x) => x.ki))], ['ops']);
  t.deepEqual((await b.client.ok('api_log_get', { k: Keys.master, n: 1, f: 'func=test' }) as any[]).map((x) => x.func), ['test']);
  // 3.3.2's columns: id the primary key, t and tf NUMERIC(20, 8)
  const cols = await rows(uri, `SELECT column_name AS c, data_type AS d, numeric_precision AS p, numeric_scale AS s, character_maximum_length AS n
    FROM information_schema.columns WHERE table_name = 'api_log' ORDER BY ordinal_position`);
  t.deepEqual(cols.map((c) => `${c.c} ${c.d}${c.n ? `(${c.n})` : c.p ? `(${c.p},${c.s})` : ''}`), [
    'id character varying(36)', 't numeric(20,8)', 'tf numeric(20,8)', 'gw character varying(128)', 'ip character varying(45)',
    'auth character varying(128)', 'u character varying(128)', 'utp character varying(32)', 'ki character varying(2048)',
    'func character varying(128)', 'params character varying(512)', 'status character varying(32)']);
  t.deepEqual((await rows(uri, "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) WHERE i.indrelid = 'api_log'::regclass AND i.indisprimary")).map((r) => r.attname), ['id']);
  // rows 3.3.2 wrote (one at a time, its own ids) are read as ours
  await rows(uri, "INSERT INTO api_log (id, t, tf, gw, ip, auth, u, utp, ki, func, params, status) VALUES ('0a0a0a0a-0000-4000-8000-000000000000', $1, $1, 'http', '10.0.0.9', 'key', NULL, NULL, 'old', 'state', '{}', 'OK')", [Date.now() / 1000]);
  const old = (await a.client.ok('api_log_get', { k: Keys.master, f: 'ki=old' })) as any[];
  t.like(old[0], { id: '0a0a0a0a-0000-4000-8000-000000000000', ip: '10.0.0.9', func: 'state' });
});

pgtest('PostgreSQL away: calls go on, records wait in the bounded queue and go when it is back; past the bound they are dropped and counted', async (t) => {
  const server = await startPostgres(t);
  await server.createDatabase('apilog_outage');
  const uri = server.uri('apilog_outage');
  const a = await controller(t, uri, { api_log_max_records: 20 });
  await a.client.ok('test', { k: Keys.master });
  await until('the first record written', async () => (await health(a)).apilog?.written === 1);
  await server.stop();
  await until('A sees the outage', async () => !(await health(a)).connected);
  // every call answers at once: none waits for its record
  for (let i = 0; i < 30; i++) {
    const t0 = Date.now();
    t.falsy((await a.client.rpc('set_cvar', { k: Keys.master, i: `c${i}`, v: '1' })).error);
    // (a call that waited would take connect_timeout, 10 s: 5 s leaves a loaded machine its stalls)
    t.true(Date.now() - t0 < 5000, 'a call does not wait for the database');
  }
  t.like((await health(a)).apilog, { waiting: 20, dropped: 10 }, 'the queue holds its bound; the oldest records were dropped, counted');
  t.is((await a.client.rpc('api_log_get', { k: Keys.master })).error?.code, 10, 'the fleet\'s log cannot be read meanwhile');
  t.like((await health(a)).apilog, { waiting: 20, dropped: 11 });
  await server.start();
  await until('the waiting records sent', async () => {
    const h = await health(a);
    return h.connected && h.apilog?.waiting === 0;
  }, 60_000);
  // the newest 19 of the 30 calls and the api_log_get: the oldest were dropped at the bound
  const ns = (await rows(uri, "SELECT func, params FROM api_log ORDER BY t")).map((r) => `${r.func} ${r.params}`);
  t.deepEqual(ns, ['test {}', ...Array.from({ length: 19 }, (_, i) => `set_cvar {"i":"c${i + 11}","v":"1"}`), 'api_log_get {}']);
});

pgtest('the shared log pages by a record\'s id (rows of the same time too) and filters refused calls and changes as the own file', async (t) => {
  const uri = await shared.database();
  const a = await controller(t, uri, { api_log_write_interval: 0.1 });
  await a.client.rpc('login', { u: 'nobody', p: 'Wrong-Password' });
  await a.client.ok('set_cvar', { k: Keys.master, i: 'x', v: '1' });
  await a.client.ok('get_cvar', { k: Keys.master, i: 'x' });
  const get = async (p: Record<string, unknown>) => ((await a.client.ok('api_log_get', { k: Keys.master, ...p })) as any[]).filter((x) => x.func !== 'api_log_get');
  t.deepEqual((await get({ r: true })).map((x) => [x.func, x.u, x.status, x.ip]), [['login', 'nobody', 'AccessDenied', '127.0.0.1']]);
  t.deepEqual((await get({ c: true })).map((x) => x.func), ['login', 'set_cvar']);
  // three rows of one time (3.3.2 wrote times of 8 decimals): the id orders them, a page goes on after the last one
  const at = `${Math.floor(Date.now() / 1000)}.12345678`;
  for (const id of ['0b', '0c', '0a']) {
    await rows(uri, `INSERT INTO api_log (id, t, tf, gw, ip, auth, u, utp, ki, func, params, status) VALUES ($1, $2, $2, 'http', '10.0.0.9', 'key', NULL, NULL, 'same', 'set_cvar', '{}', 'OK')`,
      [`${id}000000-0000-4000-8000-000000000000`, at]);
  }
  const seen: string[] = [];
  let b: string | undefined;
  for (let i = 0; i < 5; i++) {
    const page = await get({ n: 1, f: 'ki=same', ...(b ? { b } : {}) });
    if (page.length === 0) break;
    seen.push(page[0].id.slice(0, 2));
    b = page[0].id;
  }
  t.deepEqual(seen, ['0c', '0b', '0a']);
});
