import test from 'ava';
import { CallRing, batchOf, type ApiLogRecord } from '../../plugins/sysapi/apilog/ring';
import { ApiLogColumns, ApiLogTable } from '../../plugins/sysapi/apilog/table';
import { SqliteFile } from '../../core/toolkit/sqlite-file';

const NOW = Date.now() / 1000;
const record = (i: number, over: Partial<ApiLogRecord> = {}): ApiLogRecord => ({
  t: NOW + i / 1000, tf: NOW + i / 1000, gw: 'http', ip: '127.0.0.1', auth: 'key', u: null, ki: 'masterkey', func: 'test', params: `{"i":${i}}`, status: 'OK', ...over,
});
const paramsOf = (ring: CallRing) => {
  const b = ring.take();
  return Array.from({ length: b.n }, (_, r) => b.strings[b.ids[r * 8 + 6]]);
};

async function table(t: import('ava').ExecutionContext) {
  const db = await SqliteFile.image(new Uint8Array(0));
  db.run(`CREATE TABLE api_log (${ApiLogColumns.map(([n, ty]) => `${n} ${ty}`).join(', ')}, PRIMARY KEY (id))`);
  t.teardown(() => db.close());
  return db;
}
const stored = (db: SqliteFile) => db.rows('SELECT params FROM api_log ORDER BY rowid').map((r) => r.params);

test('the ring grows to its row bound as a flood fills it; full, the oldest record goes, counted', (t) => {
  const ring = new CallRing(3000, Number.MAX_SAFE_INTEGER);
  t.is(ring.capacity, 1024, 'a few slots at first');
  for (let i = 0; i < 3000; i++) ring.add(record(i));
  t.is(ring.capacity, 3000, 'grown as far as the row bound, not past it');
  t.is(ring.dropped, 0);
  for (let i = 3000; i < 3005; i++) ring.add(record(i));
  t.is(ring.count, 3000);
  t.is(ring.dropped, 5);
  t.deepEqual(paramsOf(ring), Array.from({ length: 3000 }, (_, i) => `{"i":${i + 5}}`), 'the newest, oldest first, across the wrap');
  t.is(ring.count, 0);
  ring.add(record(9));
  t.deepEqual(paramsOf(ring), ['{"i":9}'], 'empty after a take: the next records start afresh');
  t.is(ring.dropped, 5);
});

test('the ring\'s byte bound: the oldest go while the rest weigh more; a record weighs what its row weighs in the table', async (t) => {
  const db = await table(t);
  const one = batchOf([record(1, { u: 'op', ip: null })]);
  new ApiLogTable(db).insert(one);
  const sql = db.rows(`SELECT 16 + length(id) + ifnull(length(gw), 0) + ifnull(length(ip), 0) + length(auth) + length(u) + length(ki) + length(func)
    + length(params) + length(status) AS n FROM api_log`)[0].n;
  t.is(one.bytes, Number(sql));
  const w = batchOf([record(1)]).bytes;
  const ring = new CallRing(100, 3 * w);
  for (let i = 0; i < 3; i++) ring.add(record(i));
  t.is(ring.bytes, 3 * w);
  ring.add(record(3));
  t.is(ring.count, 3);
  t.is(ring.dropped, 1);
  t.deepEqual(paramsOf(ring), ['{"i":1}', '{"i":2}', '{"i":3}']);
});

test('a batch holds each text once: a flood of one call is two numbers and a few ids per record', (t) => {
  const ring = new CallRing(1000, Number.MAX_SAFE_INTEGER);
  for (let i = 0; i < 1000; i++) ring.add(record(i, { params: '{}' }));
  const b = ring.take();
  t.is(b.n, 1000);
  t.deepEqual(b.strings, ['http', '127.0.0.1', 'key', 'masterkey', 'test', '{}', 'OK']);
  t.deepEqual(Array.from(b.ids.subarray(0, 8)), [0, 1, 2, -1, 3, 4, 5, 6], 'u is NULL');
  t.is(b.t[999], NOW + 0.999);
});

test('the table trims by what it knows of itself, as a full trim would: rows, bytes and age', async (t) => {
  const db = await table(t);
  const tab = new ApiLogTable(db);
  const w = batchOf([record(0)]).bytes;
  tab.insert(batchOf([0, 1, 2, 3].map((i) => record(i))));
  t.is(tab.trim(0, 3, 1 << 20), 3);
  t.deepEqual(stored(db), ['{"i":1}', '{"i":2}', '{"i":3}']);
  tab.insert(batchOf([record(4)]));
  t.is(tab.trim(0, 3, 2 * w), 2, 'the byte bound');
  t.deepEqual(stored(db), ['{"i":3}', '{"i":4}']);
  // by age: a row older than `before` goes, also one inserted after an earlier trim by age
  t.is(tab.trim(NOW + 0.0035, 3, 1 << 20), 1);
  t.deepEqual(stored(db), ['{"i":4}']);
  tab.insert(batchOf([record(-10)]));
  t.is(tab.trim(NOW + 0.0035, 3, 1 << 20), 1, 'the same age again: only the new row can be older');
  t.deepEqual(stored(db), ['{"i":4}']);
  // a table it did not fill (a copy from a file): counted first
  const other = new ApiLogTable(db);
  t.is(other.trim(0, 3, 1 << 20), 1);
  other.clear();
  t.is(other.trim(NOW + 1, 3, 1 << 20), 0);
  t.deepEqual(stored(db), []);
});

test('texts keep no NUL (SQLite text stops at it), as before', async (t) => {
  const db = await table(t);
  new ApiLogTable(db).insert(batchOf([record(0, { func: 'te\0st' })]));
  t.deepEqual(db.rows('SELECT func FROM api_log').map((r) => r.func), ['test']);
});

test('peek leaves the records in the ring until released; records the bound drops meanwhile are not released twice', (t) => {
  const ring = new CallRing(4, Number.MAX_SAFE_INTEGER);
  for (let i = 0; i < 3; i++) ring.add(record(i));
  const first = ring.peek(2);
  t.like(first, { start: 0, end: 2 });
  t.is(first.batch.n, 2);
  t.is(ring.count, 3, 'still held: a writer that fails loses nothing');
  // a second writer takes the next ones while the first is under way
  const second = ring.peek(10, first.end);
  t.like(second, { start: 2, end: 3 });
  t.is(second.batch.strings[second.batch.ids[6]], '{"i":2}');
  // the bound drops the oldest two while they are under way
  for (let i = 3; i < 6; i++) ring.add(record(i));
  t.is(ring.dropped, 2);
  ring.release(first.end);
  t.is(ring.count, 4, 'the dropped ones were not taken again');
  ring.release(second.end);
  t.deepEqual(paramsOf(ring), ['{"i":3}', '{"i":4}', '{"i":5}']);
});
