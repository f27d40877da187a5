import 'reflect-metadata';
import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { ApiLogStore } from '../../plugins/sysapi/apilog/store';
import { UserDb } from '../../plugins/sysapi/userdb';
import { batchOf, type ApiLogRecord } from '../../plugins/sysapi/apilog/ring';
import { TableThread } from '../../plugins/sysapi/apilog/thread';
import { SqliteFile } from '../../core/toolkit/sqlite-file';
import { sqlite3 } from '../helpers/accounts';
import { WriteHold } from '../../core/toolkit/group-commit';
import { keepingLog, tmpDir } from '../helpers/history-db';

const record = (i: number): ApiLogRecord => ({
  t: Date.now() / 1000, tf: Date.now() / 1000, gw: 'http', ip: '127.0.0.1', auth: 'key', u: null,
  ki: 'masterkey', func: 'test', params: `{"i":${i}}`, status: 'OK',
});

async function open(t: import('ava').ExecutionContext) {
  const file = path.join(tmpDir(t), 'user.db');
  const db = await UserDb.open(file, new WriteHold());
  const log = keepingLog();
  const store = new ApiLogStore(db, { keep: 3600, maxRows: 100, maxBytes: 1 << 20 }, log);
  t.teardown(async () => { await store.close(); db.close(); });
  return { file, db, store, log };
}

test('a batch goes into the table in the log thread: the user db is written without a change of its own here', async (t) => {
  const { file, db, store, log } = await open(t);
  for (let i = 0; i < 3; i++) store.add(record(i));
  await store.write();
  // the controller's thread took the thread's copy back: had it inserted and trimmed itself, it would have made a change
  t.is(db.generation, 0);
  t.is(store.stored, 3);
  t.deepEqual(sqlite3(file, 'SELECT params FROM api_log ORDER BY rowid').map((r) => r.params), ['{"i":0}', '{"i":1}', '{"i":2}']);
  t.deepEqual((await store.query({ filter: {} })).map((r) => r.params), ['{"i":0}', '{"i":1}', '{"i":2}']);
  t.deepEqual(log.lines, []);
});

test('a user changed while the thread works on its copy is kept: the batch is redone on the controller\'s thread', async (t) => {
  const { file, db, store } = await open(t);
  store.add(record(0));
  const writing = store.write();
  // the copy is made as the write starts; the change comes after it, before the thread can answer
  await new Promise<void>((resolve) => setImmediate(() => { void db.change(() => db.putUser({ user: 'alice', password: 'x', keys: ['ops'] })).then(resolve); }));
  await writing;
  await db.flush();
  t.deepEqual(sqlite3(file, 'SELECT u FROM users').map((r) => r.u), ['alice']);
  t.deepEqual(sqlite3(file, 'SELECT params FROM api_log').map((r) => r.params), ['{"i":0}']);
  t.deepEqual(db.users().map((u) => u.user), ['alice']);
});

test('the thread ends with the store: close() writes the last records before the thread ends', async (t) => {
  const { file, store } = await open(t);
  store.add(record(7));
  await store.close();
  t.true(fs.existsSync(file));
  t.deepEqual(sqlite3(file, 'SELECT params FROM api_log').map((r) => r.params), ['{"i":7}']);
});

test('the thread takes one batch at a time: a second while one is in flight is refused; a bad copy fails that batch only', async (t) => {
  const thread = new TableThread();
  t.teardown(() => thread.stop());
  const image = async () => {
    const db = await SqliteFile.image(new Uint8Array(0));
    db.run('CREATE TABLE api_log (id VARCHAR(36) NOT NULL, t NUMERIC(20, 8) NOT NULL, tf NUMERIC(20, 8), gw VARCHAR(128), ip VARCHAR(45), auth VARCHAR(128), '
      + 'u VARCHAR(128), utp VARCHAR(32), ki VARCHAR(2048), func VARCHAR(128), params VARCHAR(512), status VARCHAR(32), PRIMARY KEY (id))');
    const bytes = db.db.export();
    db.close();
    return bytes;
  };
  const job = async (records: ApiLogRecord[]) => ({ image: await image(), batch: batchOf(records), replaceAll: false, before: 0, maxRows: 2, maxBytes: 1 << 20 });
  const first = thread.run(await job([record(0), record(1), record(2)]));
  await t.throwsAsync(thread.run(await job([record(3)])), { message: /busy/ });
  t.is((await first).stored, 2, 'trimmed to maxRows in the thread');
  await t.throwsAsync(thread.run({ ...(await job([record(4)])), image: new TextEncoder().encode('not a database, not at all') }));
  t.is((await thread.run(await job([record(5)]))).stored, 1, 'the next batch is done');
});

test('a query waits for a write under way: the records it took are in the answer', async (t) => {
  const { store } = await open(t);
  store.add(record(0));
  await store.write(); // the user db open, the thread holding its copy
  store.add(record(1));
  const writing = store.write();
  // the write has taken record 1 from the ring and waits for the thread
  await new Promise((resolve) => setImmediate(resolve));
  t.is(store.buffered, 0);
  t.deepEqual((await store.query({ filter: {} })).map((r) => r.params), ['{"i":0}', '{"i":1}']);
  await writing;
});
