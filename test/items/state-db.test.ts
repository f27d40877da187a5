import fs from 'node:fs';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { makeDir } from '../helpers/controller';
import { startItemsController } from '../helpers/items';
import pg from 'pg';
import { until, sleep } from '../helpers/wait';
import { readItemsState } from '../helpers/items-file';
import { runMain, lineOf } from '../helpers/cli';
import { pgRows, postgresTests, startPostgres, PG_PASSWORD } from '../helpers/postgres';

/**
 * `[server] db = postgresql://…`: item states in EVA ICS 3.3.2's table
 * `state(id, tp, status, value)` besides the items file, on a real
 * PostgreSQL this file starts, through the real HTTP server.
 */

const { pgtest, shared } = postgresTests(test);

interface StateRow { id: string; tp: string; status: number; value: string }
const rows = async (uri: string): Promise<StateRow[]> => (await pgRows(uri, 'SELECT id, tp, status, value FROM state ORDER BY id')) as StateRow[];
const row = async (uri: string, id: string): Promise<StateRow | undefined> => ((await pgRows(uri, 'SELECT id, tp, status, value FROM state WHERE id = $1', [id])) as StateRow[])[0];
const start = (t: ExecutionContext, db: string, more: Record<string, string | number> = {}, dir?: string) =>
  startItemsController(t, { dir, ini: { server: { db, ...more } } });
type Ctl = Awaited<ReturnType<typeof start>>;
const health = async (c: Ctl) => (await (await fetch(`${c.url}/health`)).json()) as {
  statedb?: { connected: boolean; waiting: number; behind: boolean; resync: boolean; overflows: number; written: number }; degraded?: string[];
};
const behindFile = (dir: string) => path.join(dir, 'runtime', 'uc_state_db_behind.json');

pgtest('states are in table state as EVA ICS 3.3.2 keeps them, committed before the answer; two controllers keep their own rows; a restart loads the table', async (t) => {
  const uri = await shared.database();
  const a = await start(t, uri, { name: 'ctl-a' });
  // B in 3.3's SQLAlchemy spelling
  const b = await start(t, uri.replace('postgresql://', 'postgresql+psycopg2://'), { name: 'ctl-b' });
  await a.ok('create', { i: 'sensor:env/temp' });
  await a.ok('create', { i: 'unit:lights/hall' });
  await a.ok('create', { i: 'lvar:flags/ready' });
  await b.ok('create', { i: 'sensor:lab/t2' });
  // no wait: an answered update is committed
  await a.ok('update', { i: 'sensor:env/temp', s: 1, v: '21.5' });
  t.deepEqual(await row(uri, 'env/temp'), { id: 'env/temp', tp: 'S', status: 1, value: '21.5' });
  await a.ok('update', { i: 'unit:lights/hall', s: 1 });
  t.deepEqual(await row(uri, 'lights/hall'), { id: 'lights/hall', tp: 'U', status: 1, value: '' }, 'no value is 3.3.2\'s empty string');
  await a.ok('update', { i: 'lvar:flags/ready', s: 1, v: 'yes' });
  await b.ok('update', { i: 'sensor:lab/t2', s: 1, v: '7' });
  t.deepEqual((await rows(uri)).map((r) => r.id), ['env/temp', 'flags/ready', 'lab/t2', 'lights/hall'], 'B\'s start and writes left A\'s rows alone');
  t.is((await row(uri, 'flags/ready'))?.tp, 'LV');
  // the answer waits for the commit: a row lock held here keeps the write, and so the answer, back
  const locker = new pg.Client({ connectionString: uri });
  locker.on('error', () => undefined);
  await locker.connect();
  t.teardown(() => locker.end().catch(() => undefined));
  await locker.query('BEGIN');
  await locker.query("SELECT 1 FROM state WHERE id = 'env/temp' FOR UPDATE");
  let answered = false;
  const held = a.ok('update', { i: 'sensor:env/temp', v: '21.7' }).then(() => { answered = true; });
  await until('the write waits for the row lock', async () => (await pgRows(uri, "SELECT 1 FROM pg_stat_activity WHERE application_name = 'eva-statedb' AND wait_event_type = 'Lock'")).length > 0);
  await until('the items file has the change', () => (readItemsState(path.join(a.dir, 'runtime', 'uc_items.json')).items['sensor:env/temp'] as { value?: string } | undefined)?.value === '21.7');
  await sleep(300); // room for a wrong early answer to show
  t.false(answered, 'not answered while its commit waits');
  await locker.query('COMMIT');
  await held;
  t.is((await row(uri, 'env/temp'))?.value, '21.7');
  // a direct call (GET /uc-api/update) too
  t.is((await a.direct('update', { k: 'mastermastermastermastermastermastermastermastermastermaster1234', i: 'sensor:env/temp', v: '22' })).status, 200);
  t.is((await row(uri, 'env/temp'))?.value, '22');
  await a.ok('destroy', { i: 'lvar:flags/ready' });
  t.falsy(await row(uri, 'flags/ready'), 'a destroyed item\'s row goes');
  // another writer (EVA ICS 3.3.2's own statement) changes a row while A is stopped: A starts with it
  await a.stop();
  await pgRows(uri, 'update state set status=$1, value=$2 where id=$3', [-1, 'fault', 'env/temp']);
  const again = await start(t, uri, { name: 'ctl-a' }, a.dir);
  t.like(await again.ok('state', { i: 'sensor:env/temp' }), { status: -1, value: 'fault' });
  t.like(await again.ok('state', { i: 'unit:lights/hall' }), { status: 1, value: null, nstatus: 1 });
  t.falsy(fs.existsSync(behindFile(a.dir)));
  t.like((await health(again)).statedb, { connected: true, behind: false, waiting: 0 });
});

pgtest('db and userdb the same database: one link (the cluster\'s) carries both', async (t) => {
  const uri = await shared.database();
  const a = await start(t, uri, { userdb: uri });
  await a.ok('create', { i: 'sensor:one/link' });
  await a.ok('update', { i: 'sensor:one/link', s: 1, v: 'x' });
  t.is((await row(uri, 'one/link'))?.value, 'x');
  const apps = (await pgRows(uri, 'SELECT DISTINCT application_name AS app FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()')) as { app: string }[];
  t.deepEqual(apps.map((r) => r.app).filter((n) => n.startsWith('eva-')).sort(), ['eva-userdb', 'eva-userdb-listen'], 'no connection of a state db link of its own');
  t.like((await health(a)).statedb, { connected: true });
});

pgtest('db_update = manual: the table is written on save, as the items file', async (t) => {
  const uri = await shared.database();
  const a = await start(t, uri, { db_update: 'manual' });
  await a.ok('create', { i: 'sensor:man/s1' });
  await a.ok('update', { i: 'sensor:man/s1', s: 1, v: 'unsaved' });
  t.falsy(await row(uri, 'man/s1'), 'not before save');
  await a.ok('save');
  t.like(await row(uri, 'man/s1'), { tp: 'S', status: 1, value: 'unsaved' });
});

pgtest('one statement carries what arrives together (group commit); updates per second measured against the items file alone', async (t) => {
  const uri = await shared.database();
  const n = 20;
  const run = async (c: Ctl) => {
    for (let i = 0; i < n; i++) await c.ok('create', { i: `sensor:bench/s${i}` });
    const t0 = Date.now();
    let done = 0;
    // n concurrent callers, each updating its own sensor one call after another
    await Promise.all(Array.from({ length: n }, async (_, i) => {
      for (let j = 0; j < 25; j++) { await c.ok('update', { i: `sensor:bench/s${i}`, v: String(j) }); done++; }
    }));
    return Math.round(done / ((Date.now() - t0) / 1000));
  };
  const local = await startItemsController(t, {});
  const withPg = await start(t, uri);
  const localRate = await run(local);
  const before = (await health(withPg)).statedb!;
  const pgRate = await run(withPg);
  const after = (await health(withPg)).statedb!;
  t.log(`updates/s, ${n} concurrent callers: items file alone ${localRate}, with the PostgreSQL state db ${pgRate}`);
  const statements = (after as unknown as { statements: number }).statements - (before as unknown as { statements: number }).statements;
  t.log(`${after.written - before.written} states in ${statements} statements`);
  t.true(statements < after.written - before.written, 'states share statements');
  for (let i = 0; i < n; i++) t.is((await row(uri, `bench/s${i}`))?.value, '24');
});

pgtest('PostgreSQL away: updates go on into the items file, /health names the state db, the behind file is written; back: the changes made meanwhile are written; a restart mid-traffic loses no answered change', async (t) => {
  const server = await startPostgres(t);
  await server.createDatabase('outage');
  const uri = server.uri('outage');
  const a = await start(t, uri);
  const oids = Array.from({ length: 5 }, (_, i) => `sensor:out/s${i}`);
  for (const i of oids) await a.ok('create', { i });
  // callers updating their item one call after another; `last` is each one's last answered value
  const last = new Map<string, number>();
  const traffic = () => {
    let stop = false;
    const done = Promise.all(oids.map(async (i) => {
      for (let j = (last.get(i) ?? 0) + 1; !stop; j++) {
        await a.ok('update', { i, s: 1, v: String(j) });
        last.set(i, j);
      }
    }));
    return async () => { stop = true; await done; };
  };
  const moved = (since: Map<string, number>, by: number) => oids.every((i) => (last.get(i) ?? 0) > (since.get(i) ?? 0) + by);
  const caughtUp = () => until('connected, and caught up', async () => {
    const h = await health(a);
    return h.statedb?.connected && !h.statedb.behind && h.statedb.waiting === 0 && !h.degraded?.some((d) => d.startsWith('state db '));
  }, 60_000);
  const tableHoldsLast = async (what: string) => {
    for (const i of oids) t.is((await row(uri, i.replace('sensor:', '')))?.value, String(last.get(i)), `${what}: ${i}`);
  };
  // 1. stopped under traffic; the changes made while it is away are written once it is back
  let end = traffic();
  await until('traffic flows', () => moved(new Map(), 2));
  await server.stop();
  const down = await until('degraded, naming the state db', async () => {
    const h = await health(a);
    return h.statedb?.connected === false && h.degraded?.some((d) => d.startsWith('state db ')) ? h : undefined;
  }, 60_000);
  t.log(JSON.stringify(down.degraded));
  const away = new Map(last);
  await until('updates answered while it is away', () => moved(away, 3));
  await end();
  t.true(fs.existsSync(behindFile(a.dir)), 'the behind file tells a later start that the table lacks changes');
  await server.start();
  await caughtUp();
  await tableHoldsLast('written once back');
  t.false(fs.existsSync(behindFile(a.dir)), 'removed once caught up');
  // 2. a restart in the middle of traffic
  end = traffic();
  const before = new Map(last);
  await until('traffic flows again', () => moved(before, 2));
  await server.stop();
  await server.start();
  const after = new Map(last);
  await until('traffic after the restart', () => moved(after, 2), 60_000);
  await end();
  await caughtUp();
  await tableHoldsLast('after a restart mid-traffic');
});

pgtest('PostgreSQL hangs with its connections open: an update waiting for its row is answered after answer_wait, the state db counts as away (behind file); once it goes on, the table catches up', async (t) => {
  t.timeout(180_000);
  const server = await startPostgres(t);
  await server.createDatabase('hangs');
  const uri = server.uri('hangs');
  const a = await start(t, uri);
  await a.ok('create', { i: 'sensor:hang/s' });
  await a.ok('update', { i: 'sensor:hang/s', s: 1, v: '1' });
  server.freeze(true);
  // before the server's stop (teardowns run last first): a stopped server takes no signal to end
  t.teardown(() => server.freeze(false));
  const t0 = performance.now();
  const r = await Promise.race([a.ok('update', { i: 'sensor:hang/s', v: '2' }).then(() => 'answered'), sleep(60_000).then(() => 'no answer within 60 s')]);
  const took = performance.now() - t0;
  t.log(`update answered after ${took.toFixed(0)} ms`);
  t.is(r, 'answered', 'the change is in the items file; the table gets it once the server answers');
  t.true(took >= 9_500, 'not before answer_wait');
  const h = await health(a);
  t.like(h.statedb, { connected: false, behind: true });
  t.true(h.degraded?.some((d) => d.startsWith('state db ') && d.includes('no answer within 10 s')), JSON.stringify(h.degraded));
  t.true(fs.existsSync(behindFile(a.dir)));
  // while it counts as away, an update is answered at once (well before answer_wait)
  const t1 = performance.now();
  await a.ok('update', { i: 'sensor:hang/s', v: '3' });
  t.true(performance.now() - t1 < 9_000);
  server.freeze(false);
  await until('connected, and caught up', async () => {
    const x = await health(a);
    return x.statedb?.connected && !x.statedb.behind && x.statedb.waiting === 0;
  }, 60_000);
  t.deepEqual(await row(uri, 'hang/s'), { id: 'hang/s', tp: 'S', status: 1, value: '3' });
  t.false(fs.existsSync(behindFile(a.dir)));
});

pgtest('past the queue bound while away the changes are forgotten and every item is written once it is back; a start behind writes the items file\'s states', async (t) => {
  const server = await startPostgres(t);
  await server.createDatabase('bound');
  const uri = server.uri('bound');
  const a = await start(t, uri, { state_db_queue_max: 4 });
  const oids = Array.from({ length: 8 }, (_, i) => `sensor:b/s${i}`);
  for (const i of oids) await a.ok('create', { i });
  await server.stop();
  await until('away', async () => (await health(a)).statedb?.connected === false, 60_000);
  for (const i of oids) await a.ok('update', { i, s: 1, v: 'away' });
  const h = (await health(a)).statedb!;
  t.true(h.overflows > 0, 'the bound was passed');
  t.true(h.resync, 'every item is written once it is back');
  t.true(h.waiting <= 4, `${h.waiting} changes wait`);
  // stopped behind: the next start (its database back) writes the items file's states over the table's
  await a.stop();
  t.true(fs.existsSync(behindFile(a.dir)));
  await server.start();
  await pgRows(uri, 'update state set value = $1', ['stale']);
  const b = await start(t, uri, { state_db_queue_max: 4 }, a.dir);
  await until('caught up', async () => !(await health(b)).statedb?.behind, 60_000);
  for (const r of await rows(uri)) t.is(r.value, 'away', r.id);
  t.like(await b.ok('state', { i: 'sensor:b/s0' }), { value: 'away' }, 'the items file won');
});

pgtest('EVA ICS 3.3.2\'s table: made by it, read by it (its statements), written by it; widened for long values', async (t) => {
  const uri = await shared.database();
  // 3.3.2's SQLAlchemy declaration, as it creates it
  await pgRows(uri, 'CREATE TABLE state (id VARCHAR(256) NOT NULL, tp VARCHAR(10), status INTEGER, value VARCHAR(8192), PRIMARY KEY (id))');
  await pgRows(uri, 'insert into state (id, tp, status, value) values ($1, $2, $3, $4)', ['plant/pump', 'U', 1, '']);
  await pgRows(uri, 'insert into state (id, tp, status, value) values ($1, $2, $3, $4)', ['plant/level', 'S', 1, '42']);
  const dir = makeDir(t, { ini: { server: { db: uri } }, files: {
    // the items this controller holds (3.3.2 had them in its own files)
    'runtime/uc_items.json': JSON.stringify({ version: 1, items: {
      'unit:plant/pump': { status: 0, value: null, t: 1 }, 'sensor:plant/level': { status: 0, value: null, t: 1 }, 'unit:plant/level': { status: 0, value: null, t: 1 },
    } }),
  } });
  const c = await startItemsController(t, { dir });
  t.like(await c.ok('state', { i: 'unit:plant/pump' }), { status: 1, value: null });
  t.like(await c.ok('state', { i: 'sensor:plant/level' }), { status: 1, value: '42' });
  // 3.3.2 reads what is written here with its own statement
  await c.ok('update', { i: 'sensor:plant/level', v: '43' });
  t.deepEqual(await pgRows(uri, 'select id, status, value from state where tp = $1', ['S']), [{ id: 'plant/level', status: 1, value: '43' }]);
  // a unit with the sensor's full id: one row per full id, as in 3.3.2; the sensor's row is left alone
  await c.ok('update', { i: 'unit:plant/level', s: 5 });
  t.like(await row(uri, 'plant/level'), { tp: 'S', status: 1, value: '43' });
  // the value column was widened: a value longer than 3.3.2's 8192 characters is kept
  const long = 'x'.repeat(10_000);
  await c.ok('update', { i: 'sensor:plant/level', v: long });
  t.is((await row(uri, 'plant/level'))?.value, long);
  const [column] = (await pgRows(uri, "SELECT data_type FROM information_schema.columns WHERE table_name = 'state' AND column_name = 'value'")) as { data_type: string }[];
  t.is(column.data_type, 'text');
});

test('a db that is a malformed PostgreSQL URI is refused with its line (exit 3), by --check-config and at start; 3.3\'s SQLite path changes nothing', async (t) => {
  for (const bad of ['postgresql://u:secretpw@/db', 'postgresql+psycopg2://u:secretpw@h']) {
    const dir = makeDir(t, { ini: { server: { db: bad } } });
    for (const args of [['--dir', dir, '--check-config'], ['--dir', dir]]) {
      const r = await runMain(t, args);
      t.is(r.code, 3, r.err);
      t.truthy(lineOf(r.err, `${dir}/etc/uc.ini:4: error: [server] db: `), r.err);
      t.false(r.err.includes('secretpw'), 'the password is never told');
    }
  }
  const sqlite = await runMain(t, ['--dir', makeDir(t, { ini: { server: { db: 'db/uc.db' } } }), '--check-config']);
  t.is(sqlite.code, 0, sqlite.err);
});

pgtest('a wrong password or a missing database is refused with the line (exit 3), by --check-config and at start', async (t) => {
  const uri = await shared.database();
  for (const bad of [uri.replace(PG_PASSWORD, 'wrong-password'), uri.replace(/\/[a-z0-9_]+$/, '/no_such_db')]) {
    const dir = makeDir(t, { ini: { server: { db: bad } } });
    for (const args of [['--dir', dir, '--check-config'], ['--dir', dir]]) {
      const r = await runMain(t, args);
      t.is(r.code, 3, r.err);
      t.truthy(lineOf(r.err, `${dir}/etc/uc.ini:4: error: [server] db: `), r.err);
      t.false(r.err.includes(PG_PASSWORD) || r.err.includes('wrong-password'), 'the password is never told');
    }
  }
  const ok = await runMain(t, ['--dir', makeDir(t, { ini: { server: { db: uri } } }), '--check-config']);
  t.is(ok.code, 0, ok.err);
});
