import test, { type ExecutionContext } from 'ava';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseDbProps, resolveDbFile } from '../../plugins/notifiers/db/props';
import { dbType, historyOptions, DbIniSettings } from '../../plugins/notifiers/db';
import type { HistoryRow } from '../../plugins/notifiers/db/schema';
import { run, sqlite3Lines, python, keepingLog, tmpDir, history, now, sleep } from '../helpers/history-db';
import { until } from '../helpers/wait';
import { startController, Keys } from '../helpers/controller';
import { needs } from '../helpers/tools';

test('db props: file and keep, URIs and bad keep refused', (t) => {
  t.deepEqual(parseDbProps('history.db'), { db: 'history.db' });
  t.deepEqual(parseDbProps('db/history.db:3600'), { db: 'db/history.db', keep: 3600 });
  t.throws(() => parseDbProps(''), { message: /expected <file>/ });
  t.throws(() => parseDbProps('history.db:-5'), { message: /keep/ });
  t.throws(() => parseDbProps('history.db:1.5'), { message: /keep/ });
  t.throws(() => parseDbProps('history.db:0'), { message: /keep/ });
  // 3.3's forms: SQLAlchemy's sqlite:/// prefix is optional (four slashes: an absolute path); other engines are not here
  t.deepEqual(parseDbProps('sqlite:///runtime/db/history1.db'), { db: 'runtime/db/history1.db' });
  t.deepEqual(parseDbProps('sqlite:////srv/eva/runtime/h.db'), { db: '/srv/eva/runtime/h.db' });
  t.throws(() => parseDbProps('mysql+pymysql://u:p@h/db'), { message: /only an SQLite file/ });
});

test('db file: relative to the controller folder as 3.3 opened it, an earlier runtime/ file kept where it is, never outside the controller folder', (t) => {
  const dir = tmpDir(t);
  const runtime = path.join(dir, 'runtime');
  const paths = { dir, runtime };
  fs.mkdirSync(runtime);
  t.is(resolveDbFile(paths, 'h.db'), path.join(dir, 'h.db'));
  t.is(resolveDbFile(paths, 'sub/h.db'), path.join(dir, 'sub', 'h.db'));
  // EVA ICS 3.3's own set-up: db:runtime/db/history1.db, relative to the controller folder
  t.is(resolveDbFile(paths, 'runtime/db/history1.db'), path.join(runtime, 'db', 'history1.db'));
  t.is(resolveDbFile(paths, './runtime/h.db'), path.join(runtime, 'h.db'));
  t.is(resolveDbFile(paths, path.join(runtime, 'abs.db')), path.join(runtime, 'abs.db'));
  t.is(resolveDbFile(paths, path.join(dir, 'var', 'abs.db')), path.join(dir, 'var', 'abs.db'));
  // a file earlier versions made in runtime/ (they read relative names from there) is opened where it is...
  fs.writeFileSync(path.join(runtime, 'old.db'), '');
  t.is(resolveDbFile(paths, 'old.db'), path.join(runtime, 'old.db'));
  // ...unless the controller folder holds one of that name (3.3's)
  fs.writeFileSync(path.join(dir, 'old.db'), '');
  t.is(resolveDbFile(paths, 'old.db'), path.join(dir, 'old.db'));
  t.throws(() => resolveDbFile(paths, '../h.db'), { message: /outside the controller folder/ });
  t.throws(() => resolveDbFile(paths, 'runtime/../../h.db'), { message: /outside the controller folder/ });
  t.throws(() => resolveDbFile(paths, '/etc/h.db'), { message: /outside the controller folder/ });
  t.throws(() => resolveDbFile(paths, dir), { message: /outside the controller folder/ });
  const elsewhere = fs.mkdtempSync(path.join(os.tmpdir(), 'hist-out-'));
  t.teardown(() => fs.rmSync(elsewhere, { recursive: true, force: true }));
  fs.symlinkSync(elsewhere, path.join(runtime, 'out'));
  fs.symlinkSync(elsewhere, path.join(dir, 'out'));
  t.throws(() => resolveDbFile(paths, 'out/h.db'), { message: /outside the controller folder/ });
  t.throws(() => resolveDbFile(paths, 'runtime/out/h.db'), { message: /outside the controller folder/ });
});

needs('sqlite3', 'python3')('rows reach the file with the 3.3 schema; sqlite3 and python read them', async (t) => {
  const file = path.join(tmpDir(t), 'h.db');
  const h = history(t, { file, space: 'plant1' });
  const t0 = now();
  await h.write([['plant1', t0, 'sensor:env/temp', 1, '21.5'], ['plant1', t0 + 0.001, 'unit:hall/lamp', 0, null]]);
  await h.flush();
  t.deepEqual(await sqlite3Lines(file, 'SELECT space, oid, status, value FROM state_history ORDER BY t'), [
    'plant1|sensor:env/temp|1|21.5', 'plant1|unit:hall/lamp|0|',
  ]);
  t.deepEqual(await python(file, 'SELECT oid, status, value FROM state_history ORDER BY t'), [
    ['sensor:env/temp', 1, '21.5'], ['unit:hall/lamp', 0, null],
  ]);
  // plugins/notifiers/README.md: primary key (space, t, oid), indexes on (space, t, oid) and (space, oid)
  const pk = await sqlite3Lines(file, "SELECT name FROM pragma_table_info('state_history') WHERE pk > 0 ORDER BY pk");
  t.deepEqual(pk, ['space', 't', 'oid']);
  const idx = await sqlite3Lines(file, "SELECT il.name, group_concat(ii.name) FROM pragma_index_list('state_history') il, pragma_index_info(il.name) ii WHERE il.origin = 'c' GROUP BY il.name ORDER BY il.name");
  t.deepEqual(idx, ['i_oid|space,oid', 'i_t_oid|space,t,oid']);
});

needs('sqlite3')('two states of an item at one instant: the later one is kept', async (t) => {
  const file = path.join(tmpDir(t), 'h.db');
  const h = history(t, { file });
  const t0 = now();
  await h.write([['', t0, 'sensor:g/s', 1, 'first'], ['', t0, 'sensor:g/s', 1, 'second']]);
  await h.write([['', t0, 'sensor:g/s', -1, null]]);
  await h.flush();
  t.deepEqual(await sqlite3Lines(file, "SELECT status, quote(value) FROM state_history"), ['-1|NULL']);
  t.like(h.stats, { received: 3, inserted: 1, replaced: 2, rows: 1 });
});

needs('sqlite3')('the row bound drops the oldest rows first', async (t) => {
  const file = path.join(tmpDir(t), 'h.db');
  const h = history(t, { file, maxRows: 100 });
  const t0 = now();
  const rows: HistoryRow[] = Array.from({ length: 250 }, (_, i) => ['', t0 + i / 1000, `sensor:g/s${i}`, 1, String(i)]);
  await h.write(rows.slice(0, 120));
  await h.write(rows.slice(120));
  await h.flush();
  t.deepEqual(await sqlite3Lines(file, 'SELECT count(*), min(CAST(value AS INT)), max(CAST(value AS INT)) FROM state_history'), ['100|150|249']);
  t.is(h.stats?.trimmed, 150);
  t.is(h.stats?.rows, 100);
});

needs('sqlite3')('the size bound holds when values are long', async (t) => {
  const file = path.join(tmpDir(t), 'h.db');
  const maxBytes = 256 * 1024;
  const h = history(t, { file, maxBytes });
  const t0 = now();
  const long = 'x'.repeat(2000);
  for (let b = 0; b < 10; b++) {
    await h.write(Array.from({ length: 100 }, (_, i): HistoryRow => ['', t0 + (b * 100 + i) / 1000, `sensor:g/s${b * 100 + i}`, 1, long]));
  }
  await h.flush();
  const [count, newest] = (await sqlite3Lines(file, "SELECT count(*), max(CAST(substr(oid, 11) AS INT)) FROM state_history"))[0].split('|').map(Number);
  t.true(count > 0 && count < 1000, `${count} rows kept`);
  t.is(newest, 999); // the newest rows stay
  const used = Number((await sqlite3Lines(file, 'SELECT (c.page_count - f.freelist_count) * s.page_size FROM pragma_page_count() c, pragma_freelist_count() f, pragma_page_size() s'))[0]);
  t.true(used <= maxBytes, `${used} bytes in use`);
  t.is(h.stats?.trimmed, 1000 - count);
});

needs('sqlite3')('rows older than keep are deleted, other spaces are left alone', async (t) => {
  const file = path.join(tmpDir(t), 'h.db');
  const old = now() - 7200;
  // a history written by another program, as 3.3 would have left it
  await run('sqlite3', [file, [
    'CREATE TABLE state_history (space VARCHAR(64) NOT NULL, t NUMERIC(20,8) NOT NULL, oid VARCHAR(256) NOT NULL, status INT(1), value VARCHAR(8192), PRIMARY KEY (space, t, oid));',
    `INSERT INTO state_history VALUES ('', ${old}, 'sensor:g/old', 1, 'x');`,
    `INSERT INTO state_history VALUES ('', ${now() - 60}, 'sensor:g/recent', 1, 'y');`,
    `INSERT INTO state_history VALUES ('other', ${old}, 'sensor:g/theirs', 1, 'z');`,
  ].join('\n')]);
  const h = history(t, { file, keep: 3600 });
  await h.write([['', now(), 'sensor:g/new', 1, 'n']]);
  await h.flush();
  t.deepEqual(await sqlite3Lines(file, 'SELECT oid FROM state_history ORDER BY oid'), ['sensor:g/new', 'sensor:g/recent', 'sensor:g/theirs']);
  t.is(h.stats?.expired, 1);
});

needs('sqlite3')('retention cleaning runs by itself, without new events', async (t) => {
  const file = path.join(tmpDir(t), 'h.db');
  const h = history(t, { file, keep: 1, cleanInterval: 0.3, flushInterval: 0.2 });
  await h.start();
  // stamped seconds ahead so that it is certainly there at the first read (on a busy machine too), and expires soon after
  await h.write([['', now() + 8, 'sensor:g/s1', 1, '1']]);
  await h.flush();
  t.deepEqual(await sqlite3Lines(file, 'SELECT count(*) FROM state_history'), ['1']);
  t.true(await until('the history emptied', async () => (await sqlite3Lines(file, 'SELECT count(*) FROM state_history'))[0] === '0', 40_000));
});

needs('sqlite3')('stop writes what the last flush did not', async (t) => {
  const file = path.join(tmpDir(t), 'h.db');
  const h = history(t, { file, flushInterval: 3600 });
  await h.start();
  t.true(await until('the new file', async () => fs.existsSync(file))); // a new file is written at once, empty
  await h.write([['', now(), 'sensor:g/s1', 1, 'last']]);
  t.deepEqual(await sqlite3Lines(file, 'SELECT count(*) FROM state_history'), ['0']);
  await h.stop();
  t.deepEqual(await sqlite3Lines(file, 'SELECT value FROM state_history'), ['last']);
  await t.throwsAsync(h.write([['', now(), 'sensor:g/s1', 1, 'late']]), { message: /stopped/ });
});

needs('sqlite3')('a damaged file is kept aside and an empty history starts', async (t) => {
  const dir = tmpDir(t);
  const file = path.join(dir, 'h.db');
  fs.writeFileSync(file, 'this is not a database, but it is somebody\'s data');
  const log = keepingLog();
  const h = history(t, { file }, log);
  await h.write([['', now(), 'sensor:g/s1', 1, '1']]);
  await h.flush();
  t.deepEqual(await sqlite3Lines(file, 'SELECT oid FROM state_history'), ['sensor:g/s1']);
  const aside = fs.readdirSync(dir).filter((n) => n.startsWith('h.db.damaged-'));
  t.is(aside.length, 1);
  t.is(fs.readFileSync(path.join(dir, aside[0]), 'utf8'), 'this is not a database, but it is somebody\'s data');
  t.true(log.lines.some((l) => /moved to .*damaged/.test(l)));
});

needs('sqlite3')('batches beyond the pending bound are refused, not queued without end', async (t) => {
  const file = path.join(tmpDir(t), 'h.db');
  const h = history(t, { file, maxPending: 4 });
  await h.start();
  const results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => h.write([['', now() + i, 'sensor:g/s', 1, String(i)]])));
  const refused = results.filter((r) => r.status === 'rejected');
  t.is(refused.length, 16);
  t.regex(String((refused[0] as PromiseRejectedResult).reason), /busy/);
  await h.flush();
  t.deepEqual(await sqlite3Lines(file, 'SELECT count(*) FROM state_history'), ['4']);
});

/**
 * Write a stream of events with `write` (it resolves with the keys `oid|value` once they are handed
 * over) while sqlite3 and python3 open the file again and again: every open must find a whole
 * database holding every event handed over more than `lag` seconds before. Returns the keys written.
 */
async function streamWithReaders(t: ExecutionContext, file: string, lag: number, write: (n: number) => Promise<string[]>): Promise<string[]> {
  const written: { t: number; key: string }[] = [];
  let streaming = true;
  let producerFailed = false;
  const producer = (async () => {
    for (let n = 0; streaming; n++) {
      const keys = await write(n);
      const done = now();
      for (const key of keys) written.push({ t: done, key });
      await sleep(10);
    }
  })();
  producer.catch(() => { producerFailed = true; });
  let reads = 0;
  let checked = 0;
  try {
    // the window starts with the first write (on a loaded machine the first one may take seconds); it is long
    // enough that reads during its last 4 s have events old enough to check, and goes on until one has
    await until('the first write', () => written.length > 0 || producerFailed, 60_000);
    const end = Date.now() + (lag + 4) * 1000;
    const last = end + 60_000;
    while ((Date.now() < end || checked === 0) && Date.now() < last) {
      const opened = now();
      const expected = written.filter((w) => w.t < opened - lag).map((w) => w.key);
      const useSqlite = reads % 2 === 0;
      const sql = "SELECT oid || '|' || value FROM state_history";
      const keys = useSqlite ? await sqlite3Lines(file, sql) : (await python(file, sql)).map((r) => String(r[0]));
      if (useSqlite) t.deepEqual(await sqlite3Lines(file, 'PRAGMA quick_check'), ['ok']);
      const have = new Set(keys);
      t.deepEqual(expected.filter((k) => !have.has(k)), [], `${useSqlite ? 'sqlite3' : 'python'} read ${reads} misses events`);
      reads++;
      checked += expected.length;
    }
  } finally {
    streaming = false; // a failed read must not leave the producer writing into a stopped history
    await producer;
  }
  t.true(reads >= 4);
  t.true(checked > 0, 'some reads had events old enough to check');
  return written.map((w) => w.key);
}

needs('sqlite3', 'python3')('readers opening the file during a stream of writes always find a whole database with every older event', async (t) => {
  const file = path.join(tmpDir(t), 'h.db');
  const flushInterval = 0.3;
  const h = history(t, { file, flushInterval });
  await h.start();
  // the flush interval plus a generous margin for a machine shared with other work: each write fsyncs the
  // journal, and under load a checkpoint's fsync may take a second, which also lengthens the pause after it
  const written = await streamWithReaders(t, file, flushInterval + 5, async (n) => {
    const batch: HistoryRow[] = Array.from({ length: 5 }, (_, i) => ['', now(), `sensor:g/s${n * 5 + i}`, 1, String(n)]);
    await h.write(batch); // handed over once the history holds them: when the notifier host counts them sent
    return batch.map((r) => `${r[2]}|${r[4]}`);
  });
  await h.stop();
  t.is((await python(file, 'SELECT count(*) FROM state_history'))[0][0], written.length);
});

/** Start a controller with one db notifier subscribed to every state. */
async function controllerWithHistory(t: ExecutionContext, fields: Record<string, unknown> = {}) {
  const notifier = {
    id: 'hist', type: 'db', enabled: true, db: 'history.db', keep: 3600, space: 'site1', flush_interval: 0.3,
    events: [{ subject: 'state', types: ['#'], groups: ['#'] }], ...fields,
  };
  return startController(t, { files: { 'runtime/uc_notify.d/hist.json': JSON.stringify(notifier) } });
}

needs('sqlite3', 'python3')('readers during a stream of item updates through the controller see every older state', async (t) => {
  const c = await controllerWithHistory(t, { flush_interval: 0.3, max_write_mb_per_hour: 10_000 });
  const file = path.join(c.dir, 'history.db');
  const k = Keys.master;
  const sensors = ['sensor:env/s1', 'sensor:env/s2', 'sensor:env/s3'];
  for (const i of sensors) await c.client.ok('create', { k, i });
  // notifiers start after the controller listens (a slow one must not hold the API back): the history writes its
  // file at its own start, about 0.1 s later here, and a reader before that finds no file at all
  t.true(await until('the history file', () => fs.existsSync(file)));
  // a budget that lets the file follow the flush interval (the default keeps a file minutes behind: plugins/notifiers/README.md);
  // through the API, the host's queue, the commit interval and the history thread: a wider margin than the flush interval alone
  // (3 s missed events at a load of 20: a checkpoint's export and fsync then take seconds)
  const written = await streamWithReaders(t, file, 8, async (n) => {
    const i = sensors[n % sensors.length];
    await c.client.ok('update', { k, i, s: 1, v: `v${n}` });
    return [`${i}|v${n}`];
  });
  await c.stop();
  const all = new Set(await sqlite3Lines(file, "SELECT oid || '|' || value FROM state_history"));
  t.deepEqual(written.filter((w) => !all.has(w)), []);
});

needs('sqlite3', 'python3')('item updates through the controller end up in the history file; save flushes; get_notifier shows figures', async (t) => {
  const c = await controllerWithHistory(t, { flush_interval: 3600 });
  const file = path.join(c.dir, 'history.db');
  const k = Keys.master;
  await c.client.ok('create', { k, i: 'sensor:env/temp' });
  await c.client.ok('create', { k, i: 'lvar:flags/on' });
  for (const v of ['20', '21', '22']) await c.client.ok('update', { k, i: 'sensor:env/temp', s: 1, v });
  await c.client.ok('update', { k, i: 'lvar:flags/on', s: 1, v: 'yes' });
  // the flush interval is an hour: only `save` can have written these
  let values: string[] = [];
  t.true(await until('the saved values in the file', async () => {
    await c.client.ok('save', { k });
    values = await sqlite3Lines(file, "SELECT value FROM state_history WHERE oid = 'sensor:env/temp' AND value IS NOT NULL ORDER BY t");
    return values.length >= 3;
  }));
  t.deepEqual(values.slice(-3), ['20', '21', '22']);
  t.deepEqual(await python(file, "SELECT DISTINCT space FROM state_history"), [['site1']]);
  const info = await c.client.ok('get_notifier', { k, i: 'hist' });
  t.is(info.type, 'db');
  t.is(info.db, 'history.db');
  t.is(info.keep, 3600);
  t.true(info.stats.rows >= 4);
  t.true(info.stats.flushes >= 1);
  t.is(info.stats.file, file);
});

needs('sqlite3')('the last events reach the file at controller stop; actions and logs are not stored', async (t) => {
  const c = await controllerWithHistory(t, {
    flush_interval: 3600,
    events: [{ subject: 'state', types: ['#'], groups: ['#'] }, { subject: 'log', level: 10 }, { subject: 'action', types: ['#'], groups: ['#'] }],
  });
  const file = path.join(c.dir, 'history.db');
  const k = Keys.master;
  await c.client.ok('create', { k, i: 'unit:hall/lamp' });
  await c.client.ok('action', { k, i: 'unit:hall/lamp', s: 1, w: 5 });
  await c.client.ok('log_info', { k, m: 'a log record' });
  await c.client.ok('update', { k, i: 'unit:hall/lamp', s: 0 });
  await c.stop();
  const rows = await sqlite3Lines(file, 'SELECT oid, status FROM state_history ORDER BY t');
  t.true(rows.length >= 2);
  t.true(rows.every((r) => r.startsWith('unit:hall/lamp|')), rows.join(', '));
  t.is(rows[rows.length - 1], 'unit:hall/lamp|0');
});

needs('sqlite3')('a db file in a folder that does not exist yet: the folder is made and the history kept', async (t) => {
  const c = await controllerWithHistory(t, { db: 'history/site1/h.db' });
  const file = path.join(c.dir, 'history', 'site1', 'h.db');
  // notifiers start after the controller listens: a stop before this one started would leave no file (as above)
  t.true(await until('the history file', () => fs.existsSync(file)));
  await c.client.ok('create', { k: Keys.master, i: 'sensor:env/t' });
  await c.client.ok('update', { k: Keys.master, i: 'sensor:env/t', s: 1, v: '21' });
  await c.stop();
  t.deepEqual(await sqlite3Lines(file, "SELECT oid || '|' || value FROM state_history WHERE value = '21'"), ['sensor:env/t|21']);
});

test('a db notifier pointing outside the controller folder is refused with a reason', async (t) => {
  const c = await controllerWithHistory(t, { db: '../escape.db' });
  const info = await c.client.ok('get_notifier', { k: Keys.master, i: 'hist' });
  t.regex(String(info.problem), /outside the controller folder/);
  t.false(fs.existsSync(path.join(c.dir, '..', 'escape.db')));
});

test('the type: props, target, defaults', (t) => {
  t.deepEqual(dbType.parseProps!('h.db:600'), { db: 'h.db', keep: 600 });
  t.is(dbType.target!({ id: 'x', type: 'db', enabled: true, events: [], db: 'h.db', keep: 600 }), 'h.db:600');
  const cfg = { id: 'x', type: 'db', enabled: true, events: [], db: 'h.db' };
  dbType.validate!(cfg);
  t.is((cfg as Record<string, unknown>).keep, 86400);
  t.throws(() => dbType.validate!({ id: 'x', type: 'db', enabled: true, events: [], db: 'h.db', max_rows: -1 }), { message: /max_rows/ });
  t.throws(() => dbType.validate!({ id: 'x', type: 'db', enabled: true, events: [] }), { message: /db \(the database file\) is missing/ });
});

test('write budget: the notifier field, else [notifiers] max_write_mb_per_hour, else the default; a bad file value is refused', (t) => {
  const paths = { dir: '/srv/ctl', runtime: '/srv/ctl/runtime' };
  const cfg = (extra: Record<string, unknown> = {}) => ({ id: 'x', type: 'db', enabled: true, events: [], db: 'h.db', ...extra });
  const mb = 1024 * 1024;
  t.is(historyOptions(cfg(), paths).maxWriteBytesPerHour, DbIniSettings.max_write_mb_per_hour.default * mb);
  // a bad [notifiers] value never gets here: the settings check stops the controller first (test/settings)
  t.is(historyOptions(cfg(), paths, 200).maxWriteBytesPerHour, 200 * mb);
  t.is(historyOptions(cfg({ max_write_mb_per_hour: 8 }), paths, 200).maxWriteBytesPerHour, 8 * mb);
  t.throws(() => historyOptions(cfg({ max_write_mb_per_hour: -1 }), paths), { message: /max_write_mb_per_hour/ });
  t.is(historyOptions(cfg({ db: 'runtime/db/history1.db' }), paths).file, '/srv/ctl/runtime/db/history1.db');
});

test('journal bound: max_journal_size from the notifier file, else 32 MiB; below 64 KiB refused', (t) => {
  const paths = { dir: '/srv/c', runtime: '/srv/c/runtime' };
  const cfg = (extra: Record<string, unknown> = {}) => ({ id: 'db_1', type: 'db', enabled: true, events: [], db: 'history.db', ...extra });
  t.is(historyOptions(cfg(), paths).journalMax, 32 * 1024 * 1024);
  t.is(historyOptions(cfg({ max_journal_size: 128 * 1024 * 1024 }), paths).journalMax, 128 * 1024 * 1024);
  t.throws(() => historyOptions(cfg({ max_journal_size: 1000 }), paths), { message: /max_journal_size/ });
});


test('each db setting is declared once: the file check, create and get_notifier read the same declaration', (t) => {
  const paths = { dir: '/srv/ctl', runtime: '/srv/ctl/runtime' };
  const cfg = (extra: Record<string, unknown> = {}) => ({ id: 'x', type: 'db', enabled: true, events: [], db: 'h.db', ...extra });
  // the range the ini budget has is the file's too
  t.throws(() => historyOptions(cfg({ flush_interval: 0 }), paths), { message: 'db notifier x: flush_interval must be at least 0.001, not 0' });
  t.throws(() => historyOptions(cfg({ max_write_mb_per_hour: 0 }), paths), { message: 'db notifier x: max_write_mb_per_hour must be at least 0.001, not 0' });
  t.throws(() => historyOptions(cfg({ max_rows: 1.5 }), paths), { message: 'db notifier x: max_rows must be a whole number, not 1.5' });
  t.is(historyOptions(cfg({ max_rows: '20' }), paths).maxRows, 20);
  // what a file leaves out is the declared default, as get_notifier shows it
  t.like(dbType.serialize!(cfg()), { keep: 86400, flush_interval: 5, max_rows: 1_000_000, max_size: 256 * 1024 * 1024, max_write_mb_per_hour: null });
  t.is(historyOptions(cfg(), paths).flushInterval, 5);
});
