import test from 'ava';
import { startController, Keys } from '../helpers/controller';
import { sqlite3, userDbOf } from '../helpers/accounts';
import { sleep, until } from '../helpers/wait';

const m = { k: Keys.master };
const FAST = { api_log_write_interval: 0.1 };
const rowsOf = (dir: string, where = '1') => sqlite3(userDbOf(dir), `SELECT id, func, params FROM api_log WHERE ${where} ORDER BY t`);

test('the row bound: at api_log_max_records every record is kept, one more drops the oldest', async (t) => {
  const { client, dir } = await startController(t, { ini: { server: { keep_api_log: 3600, api_log_max_records: 5, ...FAST } } });
  for (let i = 0; i < 5; i++) await client.ok('set_cvar', { ...m, i: `v${i}`, v: '1' });
  await until('5 rows written', () => rowsOf(dir).length === 5);
  t.deepEqual(rowsOf(dir).map((r) => r.params), [0, 1, 2, 3, 4].map((i) => `{"i":"v${i}","v":"1"}`));
  await client.ok('set_cvar', { ...m, i: 'v5', v: '1' });
  await until('the 6th written', () => rowsOf(dir).some((r) => r.params === '{"i":"v5","v":"1"}'));
  t.deepEqual(rowsOf(dir).map((r) => r.params), [1, 2, 3, 4, 5].map((i) => `{"i":"v${i}","v":"1"}`));
  // api_log_get sees the same (its own call is recorded after it answers)
  t.deepEqual((await client.ok('api_log_get', m)).map((r: any) => r.params), [1, 2, 3, 4, 5].map((i) => `{"i":"v${i}","v":"1"}`));
});

test('the byte bound: as many records as fit in api_log_max_bytes, the newest', async (t) => {
  // every `test` record of the master key weighs the same: find it, then bound the log at 7 of them exactly
  const probe = await startController(t, { ini: { server: { keep_api_log: 3600, ...FAST } } });
  await probe.client.ok('test', m);
  await until('written', () => rowsOf(probe.dir).length === 1);
  const size = Number(sqlite3(userDbOf(probe.dir), `SELECT 16 + length(id) + length(gw) + length(ip) + length(auth) + length(ki) + length(func)
    + length(params) + length(status) AS n FROM api_log`)[0].n);
  await probe.stop();
  const { client, dir } = await startController(t, { ini: { server: { keep_api_log: 3600, api_log_max_bytes: 7 * size, ...FAST } } });
  for (let i = 0; i < 7; i++) await client.ok('test', m);
  await until('7 rows', () => rowsOf(dir).length === 7);
  const seven = rowsOf(dir).map((r) => r.id);
  await client.ok('test', m);
  await until('the 8th written', () => !rowsOf(dir).some((r) => r.id === seven[0]));
  t.deepEqual(rowsOf(dir).map((r) => r.id).slice(0, 6), seven.slice(1), 'the oldest went, at the bound exactly');
  t.is(rowsOf(dir).length, 7);
});

test('trimmed by age: records older than keep_api_log leave the file and the answers', async (t) => {
  // keep_api_log leaves the write time to reach the file even on a loaded machine (seen under 2 s: aged out unseen)
  const { client, dir } = await startController(t, { ini: { server: { keep_api_log: 6, ...FAST } } });
  await client.ok('set_cvar', { ...m, i: 'old', v: '1' });
  await until('written', () => rowsOf(dir).length === 1);
  // from the record's own time (when the call started, which a loaded machine puts well after the request was sent)
  await sleep(Math.max(0, Number(sqlite3(userDbOf(dir), 'SELECT t FROM api_log')[0].t) * 1000 + 6_500 - Date.now()));
  t.deepEqual((await client.ok('api_log_get', m)).filter((r: any) => r.func === 'set_cvar'), [], 'not shown once older');
  await client.ok('set_cvar', { ...m, i: 'new', v: '1' });
  // the trim by age and the new record may reach the file in two writes: wait for each
  await until('the new one written', () => rowsOf(dir).some((r) => r.params === '{"i":"new","v":"1"}'));
  await until('the old one trimmed from the file', () => !rowsOf(dir).some((r) => r.params === '{"i":"old","v":"1"}'));
  t.deepEqual(rowsOf(dir).filter((r) => r.func === 'set_cvar').map((r) => r.params), ['{"i":"new","v":"1"}']);
});

test('records survive a restart (the user db); the stop writes the last ones', async (t) => {
  // a long write interval: only the stop can have written them
  const ini = { server: { keep_api_log: 3600, api_log_write_interval: 3600 } };
  const first = await startController(t, { ini });
  await first.client.ok('set_cvar', { ...m, i: 'before', v: '1' });
  await first.client.ok('test', { k: Keys.ops });
  await first.stop();
  t.deepEqual(rowsOf(first.dir).map((r) => r.func), ['set_cvar', 'test']);
  const second = await startController(t, { ini, dir: first.dir });
  const rs = await second.client.ok('api_log_get', m);
  t.deepEqual(rs.map((r: any) => [r.func, r.ki, r.status]), [['set_cvar', 'masterkey', 'OK'], ['test', 'ops', 'OK']]);
  // and a key still sees only its own after the restart
  t.deepEqual((await second.client.ok('api_log_get', { k: Keys.ops })).map((r: any) => r.func).filter((f: string) => f !== 'api_log_get'), ['test']);
});

test('a flood: the buffer keeps the newest api_log_max_records, which replace the whole table at the next write', async (t) => {
  const { client, dir, url } = await startController(t, { ini: { server: { keep_api_log: 3600, api_log_max_records: 5, api_log_write_interval: 3600 } } });
  for (let i = 0; i < 3; i++) await client.ok('set_cvar', { ...m, i: `a${i}`, v: '1' });
  t.deepEqual((await client.ok('api_log_get', m)).map((r: any) => r.params), [0, 1, 2].map((i) => `{"i":"a${i}","v":"1"}`));
  for (let i = 0; i < 6; i++) await client.ok('set_cvar', { ...m, i: `b${i}`, v: '1' });
  // buffered: that api_log_get and b0..b5, 7 records: the newest 5 are kept
  const want = [1, 2, 3, 4, 5].map((i) => `{"i":"b${i}","v":"1"}`);
  t.deepEqual((await client.ok('api_log_get', m)).map((r: any) => r.params), want);
  t.deepEqual(rowsOf(dir).map((r) => r.params), want);
  // the two oldest never reached the table: counted
  const metrics = await (await fetch(`${url}/metrics`, { headers: { 'X-Auth-Key': Keys.master } })).text();
  t.regex(metrics, /^eva_api_log_dropped 2$/m);
});
