import test from 'ava';
import fs from 'node:fs';
import path from 'node:path';
import { startController, spawnController, makeDir, Keys } from '../helpers/controller';
import { failsBoth, Err } from '../helpers/api-errors';
import { until } from '../helpers/wait';
import { withProbe } from '../helpers/probe-plugin';
import { LogApiDefaults, LogSettings } from '../../plugins/sysapi/logs';

const k = Keys.ops; // sysfunc, not master
const m = Keys.master;

/** Records of the memory log written through the API (module sysapi). */
async function apiRecords(client: import('../helpers/controller').Client, params: Record<string, unknown> = {}) {
  const all = (await client.ok('log_get', { k, n: 10000, l: 10, ...params })) as { mod: string; msg: string; l: number }[];
  return all.filter((r) => r.mod === 'sysapi');
}

test('log takes a level by name (any case) or number; log_<level> writes that level; both transports', async (t) => {
  const { client } = await startController(t, { ini: { server: { debug: true } } });
  await client.ok('log', { k, l: 'WARNING', m: 'by name' });
  await client.ok('log', { k, l: 40, m: 'by number' });
  t.deepEqual((await client.get('log', { k, l: '50', m: 'number as text' })).body, { result: 'OK' });
  t.deepEqual((await client.post('log', { k, m: 'default level' })).body, { result: 'OK' });
  for (const level of ['debug', 'info', 'warning', 'error', 'critical']) {
    t.deepEqual(await client.ok(`log_${level}`, { k, m: `via log_${level}` }), { ok: true });
  }
  t.deepEqual((await client.get('log_info', { k, m: 'direct' })).body, { result: 'OK' });
  await client.ok('log_info', { k, m: 'y'.repeat(LogSettings.log_max_message.default) });
  const recs = await apiRecords(client);
  t.deepEqual(recs.map((r) => [r.l, r.msg]), [
    [30, 'by name'], [40, 'by number'], [50, 'number as text'], [20, 'default level'],
    [10, 'via log_debug'], [20, 'via log_info'], [30, 'via log_warning'], [40, 'via log_error'], [50, 'via log_critical'],
    [20, 'direct'], [20, 'y'.repeat(LogSettings.log_max_message.default)],
  ]);
  const rec = recs[0] as unknown as Record<string, unknown>;
  t.deepEqual(Object.keys(rec).sort(), ['dt', 'h', 'l', 'lvl', 'mod', 'msg', 'p', 't', 'th']);
  t.like(rec, { h: 'testhost', p: 'uc', th: 'main', lvl: 'warning' });
  // dt: the same time as t, ISO 8601 with the local zone's offset (3.3's records)
  t.regex(rec.dt as string, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?[+-]\d\d:\d\d$/);
  t.true(Math.abs(Date.parse(rec.dt as string) / 1000 - (rec.t as number)) < 0.001);
  t.deepEqual(recs.map((r) => (r as unknown as { lvl: string }).lvl).slice(4, 9), ['debug', 'info', 'warning', 'error', 'critical']);
  t.true(typeof rec.t === 'number' && Math.abs((rec.t as number) - Date.now() / 1000) < 3600);
});

test('bad levels, messages and log_get parameters answer 11 / 400; keys without sysfunc 2 / 403', async (t) => {
  const { client } = await startController(t);
  await failsBoth(t, client, 'log', { k, l: 'loud', m: 'x' }, Err.invalid);
  await failsBoth(t, client, 'log', { k, l: 60, m: 'x' }, Err.invalid);
  await failsBoth(t, client, 'log', { k, l: 5, m: 'x' }, Err.invalid);
  await failsBoth(t, client, 'log', { k, l: 'info' }, Err.invalid);
  await failsBoth(t, client, 'log_get', { k, l: 'nonsense' }, Err.invalid);
  await failsBoth(t, client, 'log_get', { k, n: 0 }, Err.invalid);
  await failsBoth(t, client, 'log_get', { k, n: 1.5 }, Err.invalid);
  await failsBoth(t, client, 'log_get', { k, t: -1 }, Err.invalid);
  // a message is bounded: the memory log holds up to logmem_max_records of them
  const long = 'x'.repeat(LogSettings.log_max_message.default + 1);
  await failsBoth(t, client, 'log', { k, l: 'info', m: long }, Err.invalid);
  await failsBoth(t, client, 'log_error', { k, m: long }, Err.invalid);
  for (const fn of ['log_debug', 'log_info', 'log_warning', 'log_error', 'log_critical']) {
    await failsBoth(t, client, fn, { k: Keys.plain, m: 'x' }, Err.denied);
  }
  await failsBoth(t, client, 'log', { k: Keys.plain, l: 20, m: 'x' }, Err.denied);
  await failsBoth(t, client, 'log_get', { k: Keys.plain }, Err.denied);
  await failsBoth(t, client, 'log_rotate', { k: Keys.plain }, Err.denied);
  t.deepEqual(await apiRecords(client), []);
});

test('log_get filters by level (number or name prefix), age and count: newest n, oldest first', async (t) => {
  const { client } = await startController(t);
  for (let i = 0; i < 6; i++) await client.ok('log', { k, l: i % 2 ? 'error' : 'info', m: `r${i}` });
  const mine = (recs: { mod: string; msg: string }[]) => recs.filter((r) => r.mod === 'sysapi').map((r) => r.msg);
  t.deepEqual(mine(await client.ok('log_get', { k, l: 40 })), ['r1', 'r3', 'r5']);
  t.deepEqual(mine(await client.ok('log_get', { k, l: 'err' })), ['r1', 'r3', 'r5']);
  t.deepEqual(mine((await client.get('log_get', { k, l: 'e', n: 2 })).body), ['r3', 'r5']);
  // the default level is info: everything here
  t.deepEqual(mine(await client.ok('log_get', { k })), ['r0', 'r1', 'r2', 'r3', 'r4', 'r5']);
  // the records above are 5 s old; 3 s of room for the next two calls on a loaded machine
  await new Promise((r) => setTimeout(r, 5000));
  await client.ok('log', { k, l: 'info', m: 'fresh' });
  t.deepEqual(mine(await client.ok('log_get', { k, t: 3 })), ['fresh']);
});

test('log_get n above the maximum is capped, not refused: the newest max_n records, the oldest dropped', async (t) => {
  const { client, url } = await startController(t);
  // more records than one answer may hold, written 100 to a batch
  const written = Array.from({ length: LogApiDefaults.max_n + 100 }, (_, i) => `c${i}`);
  for (let i = 0; i < written.length; i += 100) {
    const batch = written.slice(i, i + 100).map((msg, j) => ({ jsonrpc: '2.0', id: j, method: 'log_info', params: { k, m: msg } }));
    const r = await fetch(`${url}/jrpc`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(batch) });
    t.true(((await r.json()) as { result?: unknown }[]).every((a) => a.result !== undefined));
  }
  for (const n of [1_000_000, LogApiDefaults.max_n + 1]) {
    const got = (await client.ok('log_get', { k, n })) as { mod: string; msg: string }[];
    t.is(got.length, LogApiDefaults.max_n, `n=${n}`);
    const mine = got.filter((r) => r.mod === 'sysapi').map((r) => r.msg);
    // the newest records, in order, ending with the last one written; the first 100 are not among them
    t.deepEqual(mine, written.slice(-mine.length), `n=${n}`);
    t.true(mine.length > LogApiDefaults.max_n - 100 && !mine.includes('c99'), `n=${n}: ${mine.length} of mine, from ${mine[0]}`);
  }
});

test('the memory log is bounded in count: the newest records stay, the oldest are dropped', async (t) => {
  const { client } = await startController(t, { ini: { server: { logmem_max_records: 5 } } });
  for (let i = 0; i < 20; i++) await client.ok('log_info', { k, m: `flood ${i}` });
  const recs = ((await client.ok('log_get', { k, n: 100 })) as { msg: string }[]).map((r) => r.msg);
  // at the bound the log drops a tenth of it more (one splice per many records): 5, or 4 just after a drop
  t.deepEqual(recs, ['flood 15', 'flood 16', 'flood 17', 'flood 18', 'flood 19'].slice(-recs.length));
  t.true(recs.length >= 4, recs.join(', '));
});

test('the memory log drops records older than keep_logmem', async (t) => {
  const { client } = await startController(t, { ini: { server: { keep_logmem: 5 } } });
  await client.ok('log_info', { k, m: 'short-lived' });
  // read at once (well within 5 s), the record is there; once 5 s have passed it is gone
  t.true((await apiRecords(client)).some((r) => r.msg === 'short-lived'));
  await until('the record to expire', async () => !(await apiRecords(client)).some((r) => r.msg === 'short-lived'), 30_000);
  t.pass();
});

test('the memory log is bounded in size too, whatever the record count', async (t) => {
  const { client } = await startController(t, { ini: { server: { logmem_max_bytes: 100_000 } } });
  for (let i = 0; i < 40; i++) await client.ok('log_info', { k, m: `${i} `.padEnd(10_000, 'x') });
  const recs = await apiRecords(client);
  // 100 000 characters hold at most 9 of these records (plus their small overhead)
  t.true(recs.length >= 1 && recs.length <= 9, `${recs.length} records kept`);
  t.true(recs[recs.length - 1].msg.startsWith('39 '));
});

test('every record written through the API becomes a log event; log_rotate is accepted', async (t) => {
  const { client } = await startController(t, { files: withProbe });
  await client.ok('log_warning', { k, m: 'to the bus' });
  t.deepEqual(await client.ok('log_rotate', { k }), { ok: true });
  t.deepEqual((await client.get('log_rotate', { k })).body, { result: 'OK' });
  const events = (await client.ok('probe_log_events', { k: m })) as { mod: string; msg: string; l: number }[];
  t.like(events.find((e) => e.msg === 'to the bus'), { mod: 'sysapi', l: 30 });
  // the controller's own records go there too
  t.true(events.some((e) => e.mod === 'controller'));
});

test('the controller log goes to [server] log_file, or to standard output without one', async (t) => {
  const { client, dir } = await startController(t); // the test dirs set log_file = <dir>/controller.log
  await client.ok('log_error', { k, m: 'into the file' });
  t.regex(fs.readFileSync(path.join(dir, 'controller.log'), 'utf8'), /ERROR sysapi: into the file$/m);

  const plain = makeDir(t, { ini: { server: { log_file: '' } } });
  const child = await spawnController(t, plain);
  await child.client.ok('log_error', { k, m: 'to standard output' });
  await until('the record on standard output', () => /ERROR sysapi: to standard output$/m.test(child.output()));
  t.false(fs.existsSync(path.join(plain, 'controller.log')));
  child.proc.kill('SIGTERM');
  t.is(await child.exited, 0);
});

test('[sysapi] log_max_message bounds one message: at the bound it is written, one character more answers 11 / 400', async (t) => {
  const { client } = await startController(t, { ini: { sysapi: { log_max_message: 100 } } });
  await client.ok('log_info', { k, m: 'a'.repeat(100) });
  await client.ok('log', { k, l: 'error', m: 'b'.repeat(100) });
  await failsBoth(t, client, 'log_info', { k, m: 'c'.repeat(101) }, Err.invalid);
  await failsBoth(t, client, 'log', { k, l: 'error', m: 'd'.repeat(101) }, Err.invalid);
  t.deepEqual((await apiRecords(client)).map((r) => r.msg), ['a'.repeat(100), 'b'.repeat(100)]);
});
