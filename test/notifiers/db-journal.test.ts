import test from 'ava';
import fs from 'node:fs';
import path from 'node:path';
import type { HistoryRow } from '../../plugins/notifiers/db/schema';
import { run, sqlite3Lines, python, keepingLog, tmpDir, history, now, sleep } from '../helpers/history-db';
import { until } from '../helpers/wait';
import { startController, makeDir, Keys } from '../helpers/controller';
import { needs } from '../helpers/tools';
import { EVA33_SCHEMA } from '../helpers/eva33-history';
import { Journal } from '../../core/toolkit/journal';
import { HistoryFile } from '../../plugins/notifiers/db/store';

const segments = (file: string) => fs.readdirSync(path.dirname(file)).filter((n) => n.startsWith(`${path.basename(file)}.journal.`)).sort();
const rowsOf = (n: number, from = 0, t0 = now()): HistoryRow[] =>
  Array.from({ length: n }, (_, i) => ['', t0 + (from + i) / 1000, `sensor:g/s${(from + i) % 7}`, 1, `v${from + i}`]);

needs('sqlite3')('a stored batch is in the journal before the file is rewritten, and a new history replays it', async (t) => {
  const file = path.join(tmpDir(t), 'h.db');
  const a = history(t, { file, flushInterval: 3600 });
  await a.start();
  t.deepEqual(await sqlite3Lines(file, 'SELECT count(*) FROM state_history'), ['0']); // written before start resolved
  await a.write(rowsOf(50));
  t.deepEqual(await sqlite3Lines(file, 'SELECT count(*) FROM state_history'), ['0']);
  t.is(segments(file).length, 1);
  t.true(fs.statSync(path.join(path.dirname(file), segments(file)[0])).size > 50 * 20);
  // a second history of a copy of the file and journal, as a crashed controller leaves them
  const copy = path.join(tmpDir(t), 'h.db');
  fs.copyFileSync(file, copy);
  for (const s of segments(file)) fs.copyFileSync(path.join(path.dirname(file), s), path.join(path.dirname(copy), s));
  const b = history(t, { file: copy, flushInterval: 3600 });
  t.deepEqual((await b.query({ space: '' })).map((r) => r[4]), rowsOf(50).map((r) => r[4]));
  t.like(b.stats, { replayed: 50, rows: 50 });
  await b.flush();
  t.deepEqual(await sqlite3Lines(copy, 'SELECT count(*) FROM state_history'), ['50']);
  t.is(segments(copy).length, 1); // the replayed segments are gone, a new empty one is open
  t.is(fs.statSync(path.join(path.dirname(copy), segments(copy)[0])).size, 0);
});

needs('sqlite3')('a crash between the file rewrite and the journal cut replays rows the file has: nothing lost, nothing twice', async (t) => {
  const dir = tmpDir(t);
  const file = path.join(dir, 'h.db');
  const a = history(t, { file, flushInterval: 3600 });
  const t1 = now() + 10;
  await a.write(rowsOf(30));
  await a.write([['', t1, 'sensor:g/same', 1, 'first']]);
  const kept = segments(file).map((s) => [s, fs.readFileSync(path.join(dir, s))] as const);
  await a.write([['', t1, 'sensor:g/same', 1, 'second']]); // a later state of one key, in a later batch
  await a.flush();
  await a.stop();
  t.deepEqual(segments(file), []);
  // the state after the rename, before the old segment was deleted
  for (const [name, data] of kept) fs.writeFileSync(path.join(dir, name), data);
  const b = history(t, { file, flushInterval: 3600 });
  await b.flush();
  t.deepEqual(await sqlite3Lines(file, 'SELECT count(*), count(DISTINCT oid || t) FROM state_history'), ['31|31']);
  t.deepEqual(await sqlite3Lines(file, "SELECT value FROM state_history WHERE oid = 'sensor:g/same'"), ['second']);
  t.is(b.stats?.replayed, 0); // the file says it holds that segment
});

test('a torn record at the end of a segment (an append cut short) ends its replay with a warning', async (t) => {
  const dir = tmpDir(t);
  const file = path.join(dir, 'h.db');
  const a = history(t, { file, flushInterval: 3600 });
  await a.start();
  const empty = fs.readFileSync(file); // the file as a crash leaves it: the rows are only in the journal
  await a.write(rowsOf(10));
  await a.write(rowsOf(10, 10));
  const seg = path.join(dir, segments(file)[0]);
  const whole = fs.readFileSync(seg);
  await a.stop();
  for (const cut of [whole.length - 3, whole.length + 5]) {
    const copy = path.join(tmpDir(t), 'h.db');
    fs.writeFileSync(copy, empty);
    const torn = cut < whole.length ? whole.subarray(0, cut) : Buffer.concat([whole, Buffer.from([9, 0, 0, 0, 1])]);
    fs.writeFileSync(path.join(path.dirname(copy), path.basename(seg)), torn);
    const log = keepingLog();
    const b = history(t, { file: copy, flushInterval: 3600 }, log);
    const values = (await b.query({ space: '' })).map((r) => r[4]);
    t.deepEqual(values, rowsOf(cut < whole.length ? 10 : 20).map((r) => r[4]));
    t.true(log.lines.some((l) => /torn record/.test(l)), log.lines.join('\n'));
  }
});

needs('sqlite3')('the write budget holds checkpoints back; a journal past its share of the file forces one; save writes at once', async (t) => {
  const file = path.join(tmpDir(t), 'h.db');
  // 1 MB an hour: a file of some kB may be rewritten every few seconds at most, and the journal eats the budget
  const h = history(t, { file, flushInterval: 0.1, maxWriteBytesPerHour: 1 << 20, journalShare: 100, journalFloor: 1 << 30 });
  await h.start();
  const t0 = now();
  await h.write(rowsOf(100, 0, t0));
  await sleep(1500);
  t.deepEqual(await sqlite3Lines(file, 'SELECT count(*) FROM state_history'), ['0']);
  t.is(h.stats?.flushes, 1); // the new empty file only
  await h.flush();
  t.deepEqual(await sqlite3Lines(file, 'SELECT count(*) FROM state_history'), ['100']);

  // the same budget, but the journal may hold only a tenth of the file: it forces a checkpoint within the flush interval
  const file2 = path.join(tmpDir(t), 'h.db');
  const h2 = history(t, { file: file2, flushInterval: 0.1, maxWriteBytesPerHour: 1 << 20, journalShare: 0.1, journalFloor: 0 });
  await h2.start();
  const size = fs.statSync(file2).size;
  let n = 0;
  while ((h2.stats?.journal_bytes ?? 0) <= size * 0.1) await h2.write(rowsOf(10, (n += 10), t0));
  t.true(await until('every row in the new file', async () => (await sqlite3Lines(file2, 'SELECT count(*) FROM state_history'))[0] === String(n), 10_000));
});

test('queries: oids, prefixes, time range, limit, newest; values are bound, never spliced', async (t) => {
  const file = path.join(tmpDir(t), 'h.db');
  const h = history(t, { file, space: 'p1', flushInterval: 3600 });
  const rows: HistoryRow[] = [
    ['p1', 100, 'sensor:a/x', 1, '1'], ['p1', 101, 'sensor:a/y', 1, '2'], ['p1', 102, 'sensor:b/x', 1, '3'],
    ['p1', 103, 'sensor:a/x', 1, '4'], ['p2', 104, 'sensor:a/x', 1, 'other space'], ['p1', 105, "sensor:a/x' OR '1'='1", 1, 'odd'],
    ['p1', 106, 'sensor:a%/z', 0, null],
  ];
  await h.write(rows);
  const v = async (q: Parameters<typeof h.query>[0]) => (await h.query(q)).map((r) => r[4]);
  t.deepEqual(await v({ space: 'p1', oids: ['sensor:a/x'] }), ['1', '4']);
  t.deepEqual(await v({ space: 'p2', oids: ['sensor:a/x'] }), ['other space']);
  t.deepEqual(await v({ space: 'p1', prefixes: ['sensor:a/'] }), ['1', '2', '4', 'odd']);
  t.deepEqual(await v({ space: 'p1', prefixes: ['sensor:a%/'] }), [null]); // % is a character, not a wildcard
  t.deepEqual(await v({ space: 'p1', oids: ['sensor:b/x'], prefixes: ['sensor:a/'], start: 101, end: 103 }), ['2', '3', '4']);
  t.deepEqual(await v({ space: 'p1', limit: 2 }), ['1', '2']);
  t.deepEqual(await v({ space: 'p1', limit: 2, newest: true }), ['odd', null]);
  t.deepEqual(await v({ space: 'p1', oids: ["x' OR '1'='1"] }), []);
  t.deepEqual(await v({ space: "p1' OR '1'='1" }), []);
  t.deepEqual((await h.query({ space: 'p1', oids: ['sensor:a%/z'] }))[0], ['p1', 106, 'sensor:a%/z', 0, null]);
});

/** A drop-in plugin: the history backend of a running db notifier, as the history API finds it (Endpoint.history). */
const HISTORY_PROBE = `
module.exports.plugin = {
  name: 'historyprobe', kind: 'service', version: '1.0.0', needs: ['notifiers'],
  start(ctx) {
    ctx.register({ name: 'probe_history', permission: 'master', description: 'Endpoint.history.query',
      params: { n: { type: 'string', required: true, description: '' }, i: { type: 'string', required: true, description: '' } },
      handler: async (q) => {
        const n = ctx.service('notifiers').get(q.n);
        return n.endpoint.history.query({ space: n.config.space || '', oids: [q.i] });
      } });
  },
};
`;

needs('sqlite3', 'python3')('an EVA ICS 3.3 history file at runtime/db/history1.db is continued: its rows kept and readable, new rows added', async (t) => {
  const notifier = {
    id: 'db_1', type: 'db', enabled: true, db: 'runtime/db/history1.db', keep: 86400 * 365,
    events: [{ subject: 'state', types: ['#'], groups: ['#'] }],
  };
  const old = now() - 3600;
  const dir = makeDir(t, { files: { 'runtime/uc_notify.d/db_1.json': JSON.stringify(notifier), 'plugins/historyprobe.js': HISTORY_PROBE } });
  const file = path.join(dir, 'runtime', 'db', 'history1.db');
  fs.mkdirSync(path.dirname(file));
  await run('sqlite3', [file, `${EVA33_SCHEMA}
INSERT INTO state_history VALUES ('', ${old}, 'sensor:env/temp', 1, '20.5');
INSERT INTO state_history VALUES ('', ${old + 60}, 'sensor:env/temp', 1, '20.7');
INSERT INTO state_history VALUES ('', ${old + 90}, 'unit:hall/lamp', 0, NULL);`]);
  const c2 = await startController(t, { dir });
  const k = Keys.master;
  await c2.client.ok('create', { k, i: 'sensor:env/temp' });
  await c2.client.ok('update', { k, i: 'sensor:env/temp', s: 1, v: '21.9' });
  let answer: unknown[][] = [];
  t.true(await until('the new value in the history', async () => {
    answer = await c2.client.ok('probe_history', { k, n: 'db_1', i: 'sensor:env/temp' });
    return answer.some((r) => r[4] === '21.9');
  }));
  t.deepEqual(answer.slice(0, 2).map((r) => [r[1], r[4]]), [[old, '20.5'], [old + 60, '20.7']]);
  await c2.client.ok('save', { k });
  const rows = await python(file, "SELECT oid, value FROM state_history ORDER BY t");
  t.deepEqual(rows.slice(0, 3), [['sensor:env/temp', '20.5'], ['sensor:env/temp', '20.7'], ['unit:hall/lamp', null]]);
  t.true(rows.some((r) => r[1] === '21.9'));
  t.false(fs.existsSync(path.join(dir, 'runtime', 'runtime')));
  // still 3.3's table: its schema text, unchanged
  t.deepEqual(await sqlite3Lines(file, "SELECT count(*) FROM sqlite_master WHERE sql LIKE '%NUMERIC(20, 8)%'"), ['1']);
});

test('journal commits are spaced by the commit interval (few fsyncs a second, whatever the event rate)', async (t) => {
  const file = path.join(tmpDir(t), 'h.db');
  const h = history(t, { file, flushInterval: 3600, commitInterval: 0.3, commitRows: 50 });
  await h.start();
  let started = Date.now();
  for (let i = 0; i < 5; i++) await h.write(rowsOf(1, i));
  const took = Date.now() - started;
  // the first commit goes at once, each later one waits for the rest of 0.3 s after the one before
  t.true(took >= 4 * 300 - 20, `5 commits in ${took} ms`);
  t.like(h.stats, { batches: 5, rows: 5 });
  // a backlog (a batch of commitRows or more) does not wait: with a 10 s interval, 3 such batches take far less than one wait
  const h2 = history(t, { file: path.join(tmpDir(t), 'h.db'), flushInterval: 3600, commitInterval: 10, commitRows: 50 });
  await h2.start();
  started = Date.now();
  for (let i = 0; i < 3; i++) await h2.write(rowsOf(50, i * 50));
  t.true(Date.now() - started < 9000, `3 big batches in ${Date.now() - started} ms`);
  t.like(h2.stats, { batches: 3, rows: 150 });
});

needs('sqlite3')('the journal is bounded by journalMax whatever the file size, share and budget allow', async (t) => {
  const file = path.join(tmpDir(t), 'h.db');
  // budget, share and floor would let the journal grow without end: only the bound checkpoints
  const h = history(t, { file, flushInterval: 0.1, maxWriteBytesPerHour: 1, journalShare: 1e6, journalFloor: 1 << 30, journalMax: 64 * 1024 });
  await h.start();
  let n = 0;
  while ((h.stats?.journal_bytes ?? 0) <= 64 * 1024) await h.write(rowsOf(100, (n += 100)));
  const written = n;
  t.true(await until('a checkpoint past the bound', async () => (await sqlite3Lines(file, 'SELECT count(*) FROM state_history'))[0] === String(written), 10_000));
  await h.write(rowsOf(1, (n += 1)));
  t.true((h.stats?.journal_bytes ?? Infinity) < 64 * 1024, JSON.stringify(h.stats));
});

/** A journal of `segments` segments of `per` rows each, as a killed controller leaves it (no file). */
function killedJournal(file: string, segments: number, per: number, t0 = now() - 3600): number {
  const j = new Journal(file);
  j.open(0);
  for (let s = 0; s < segments; s++) {
    if (s) j.rotate();
    for (let b = 0; b < per; b += 500) j.append(rowsOf(500, s * per + b, t0));
  }
  j.close();
  return segments * per;
}

const optsOf = (file: string) => ({
  file, space: '', keep: 86400, maxRows: 1_000_000, maxBytes: 1 << 30, flushInterval: 3600, flushPauseFactor: 4, cleanInterval: 60, maxPending: 16,
  maxWriteBytesPerHour: 1e15, journalShare: 1e6, journalFloor: 1 << 30, journalMax: 256 * 1024, commitInterval: 0, commitRows: 1,
});

needs('sqlite3')('a replay longer than the bound records its progress in the file: a start killed during it goes on from there', async (t) => {
  const file = path.join(tmpDir(t), 'h.db');
  const total = killedJournal(file, 8, 5000); // ~250 kB a segment: the bound (256 kB) is passed every second segment
  const a = await HistoryFile.begin(optsOf(file), () => undefined, now());
  // stopped as a kill would, once the file records some segments
  const watch = setInterval(() => { if (a.stats.flushes > 0) a.abandon(); }, 5);
  await a.replay(now);
  clearInterval(watch);
  t.true(a.replaying, 'abandoned before the end');
  const held = Number((await sqlite3Lines(file, 'PRAGMA user_version'))[0]);
  t.true(held >= 2, `the file holds segments up to ${held}`);
  t.false(segments(file).some((s) => Number(s.split('.').pop()) <= held), segments(file).join());
  const inFile = Number((await sqlite3Lines(file, 'SELECT count(*) FROM state_history'))[0]);
  t.true(inFile >= held * 5000, `${inFile} rows in the file`);
  // no close: the next start finds what the kill left, replays only the rest, and has every row
  const b = await HistoryFile.open(optsOf(file), () => undefined, now());
  t.is(b.stats.replayed, total - held * 5000);
  t.is(b.query({ space: '' }).length, total);
  b.close();
});

test('rows written while the journal replays are journaled at once and inserted after the replay, in order', async (t) => {
  const file = path.join(tmpDir(t), 'h.db');
  const t0 = now() - 3600;
  const total = killedJournal(file, 4, 5000, t0);
  const a = await HistoryFile.begin(optsOf(file), () => undefined, now());
  const later = now() + 100;
  const same: HistoryRow = ['', t0, 'sensor:g/s0', 1, 'taken during the replay']; // the first replayed row's key: the later state wins
  const replay = a.replay(now);
  a.write([same, ['', later, 'sensor:g/new', 1, 'new']]);
  t.true(a.replaying);
  t.is(a.stats.taken_replaying, 2);
  await replay;
  t.false(a.replaying);
  const rows = a.query({ space: '' });
  t.is(rows.length, total + 1);
  t.deepEqual(rows.find((r) => r[1] === same[1] && r[2] === same[2]), same);
  t.deepEqual(rows.at(-1), ['', later, 'sensor:g/new', 1, 'new']);
  a.close();
});

test('a query sent while the journal replays answers after it, with the rows taken meanwhile; a stop during the replay leaves the rest in the journal', async (t) => {
  const file = path.join(tmpDir(t), 'h.db');
  const total = killedJournal(file, 10, 5000);
  const a = history(t, { file, flushInterval: 3600 });
  await a.accepting();
  await a.write([['', now(), 'sensor:g/new', 1, 'new']]);
  t.true((a.stats?.replaying ?? 0) > 0, 'answered during the replay');
  t.deepEqual((await a.query({ space: '', oids: ['sensor:g/new'] })).map((r) => r[4]), ['new']);
  t.like(a.stats, { replaying: 0, replayed: total, taken_replaying: 1, rows: total + 1 });
  await a.stop();

  const file2 = path.join(tmpDir(t), 'h.db');
  killedJournal(file2, 10, 5000);
  const b = history(t, { file: file2, flushInterval: 3600 });
  await b.accepting();
  await b.write([['', now(), 'sensor:g/new', 1, 'kept']]);
  await b.stop(); // during the replay: it ends at its next pause
  t.true(segments(file2).length >= 10, segments(file2).join());
  const c = history(t, { file: file2, flushInterval: 3600 });
  t.is((await c.query({ space: '' })).length, total + 1);
  t.deepEqual((await c.query({ space: '', oids: ['sensor:g/new'] })).map((r) => r[4]), ['kept']);
});
