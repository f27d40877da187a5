import test from 'ava';
import fs from 'node:fs';
import path from 'node:path';
import { Keys, startController } from '../helpers/controller';
import { Logger } from '../../core/log';
import { TestStream, startStreamController, HOME, ALL } from '../helpers/stream-client';
import { until } from '../helpers/wait';

/** no `API request` log lines: the tests that count numbers want only their own events */
const QUIET = { log_api_requests: 'no' };
const LOG = [{ subject: 'log', level: 'info' }];
const seqs = (messages: any[]) => messages.filter((m) => m.s === 'log' || m.s === 'state' || m.s === 'action').filter((m) => m.d.length === 1 && m.seq !== undefined).map((m) => m.seq as number);
/** Wait until the stream has an event whose log message is `msg`; its frame. */
const logged = (s: TestStream, msg: string) => s.next((m) => m.s === 'log' && m.d[0].msg === msg, 20_000);

test('every event carries seq, rising; the frame is otherwise as before; a restart on the same folder never reuses a number', async (t) => {
  const { ctl, dir, client, stop } = await startStreamController(t);
  const url = `http://127.0.0.1:${ctl.port}`;
  const s = await TestStream.open(t, url, Keys.master, ALL);
  const first = await s.next((m) => m.s === 'state');
  t.deepEqual(Object.keys(first).sort(), ['d', 's', 'seq'], 'the state at subscribe says where it stands');
  await client.ok('update', { i: 'sensor:home/t1', s: 1, v: '1', k: Keys.master });
  await client.ok('update', { i: 'sensor:home/t1', v: '2', k: Keys.master });
  await client.ok('log_warning', { m: 'run one', k: Keys.master });
  const last = await logged(s, 'run one');
  t.deepEqual(Object.keys(last), ['s', 'd', 'seq'], 'the 3.3 frame {s, d} with seq added');
  t.like(last.d[0], { msg: 'run one', l: 30 });
  const run1 = [...seqs(s.messages), last.seq];
  t.true(run1.length >= 3);
  for (const [i, n] of run1.entries()) {
    t.true(Number.isSafeInteger(n));
    if (i) t.true(n > run1[i - 1], `seq rises: ${run1.join(', ')}`);
  }
  t.true(first.seq < run1[0]);
  const epochFile = path.join(dir, 'runtime', 'uc_stream_epoch.json');
  const epoch1 = JSON.parse(fs.readFileSync(epochFile, 'utf8')).epoch;
  await stop();

  // the same folder again: a second controller, in this process
  const two = await startController(t, { dir });
  const s2 = await TestStream.open(t, two.url, Keys.master);
  s2.send({ m: 'subscribe', events: ALL, since: last.seq });
  t.like(await s2.next(), { s: 'subscribed' });
  // a number of the earlier run: what came after it is not kept here, so a gap, then the state
  t.like(await s2.next(), { s: 'gap', since: last.seq });
  const state = await s2.next();
  t.is(state.s, 'state');
  t.true(state.seq > last.seq, 'the new run numbers past the old one');
  await two.client.ok('log_warning', { m: 'run two', k: Keys.master });
  const next = await logged(s2, 'run two');
  t.true(next.seq > Math.max(...run1), `${next.seq} after ${Math.max(...run1)}`);
  const epoch2 = JSON.parse(fs.readFileSync(epochFile, 'utf8')).epoch;
  t.true(epoch2 > epoch1, 'the epoch claimed on disk rose');
  await two.stop();

  // a broken epoch file is moved aside; the clock's epoch (seconds) still numbers past the earlier runs
  fs.writeFileSync(epochFile, 'garbage');
  await until('the clock past the last epoch', () => Math.floor((Date.now() - Date.UTC(2026, 0, 1)) / 1000) > epoch2, 5000);
  const three = await startController(t, { dir });
  const s3 = await TestStream.open(t, three.url, Keys.master, LOG);
  await three.client.ok('log_warning', { m: 'run three', k: Keys.master });
  t.true((await logged(s3, 'run three')).seq > next.seq);
  t.true(fs.readdirSync(path.join(dir, 'runtime')).some((f) => f.startsWith('uc_stream_epoch.json.broken-')), 'the broken file kept aside');
});

test('since: the missed events once, in order, then live with no gap, while events keep coming during the replay', async (t) => {
  // a small send buffer: the replay (about 10 MB) has to wait for the client many times
  const { ctl, url, client } = await startStreamController(t, { webapi: { ws_max_buffer: 64 * 1024, ws_ping_interval: 600 } });
  const log = ctl.get(Logger).module('flood');
  const pad = 'p'.repeat(5000);
  const ref = await TestStream.open(t, url, Keys.master, LOG); // connected all along: what everyone should have
  const a = await TestStream.open(t, url, Keys.master, LOG);
  log.info('before');
  const last = (await logged(a, 'before')).seq;
  a.ws.close();
  await a.closed;
  const flood = async (from: number, n: number) => {
    for (let i = from; i < from + n; i += 20) {
      for (let j = i; j < i + 20; j++) log.info(`e${j} ${pad}`);
      await until('the reference client to catch up', () => ref.messages.some((m) => m.d?.[0]?.msg === `e${i + 19} ${pad}`), 20_000);
    }
  };
  const stats = async () => client.ok('stream_stats', { k: Keys.master });
  await flood(0, 2000);
  const b = await TestStream.open(t, url, Keys.master);
  b.ws.pause(); // the replay stalls at the full buffers: live events come meanwhile
  b.send({ m: 'subscribe', events: LOG, since: last });
  await until('the replay under way', async () => (await stats()).replayed > 0);
  await flood(2000, 300);
  t.is((await stats()).replaying, 1, 'the live events came during the replay');
  b.ws.resume();
  log.info('the end');
  await until('the reference client at the end', () => ref.messages.some((m) => m.d?.[0]?.msg === 'the end'));
  await until('the resumed client at the end', () => b.messages.some((m) => m.d?.[0]?.msg === 'the end'), 60_000);
  t.like(b.messages[0], { s: 'subscribed', seq: last });
  const want = seqs(ref.messages).filter((n) => n > last);
  const got = seqs(b.messages);
  t.is(got.length, want.length);
  t.deepEqual(got, want, 'every event after since, once, in order');
  t.false(b.messages.some((m) => m.s === 'gap' || m.s === 'error'));
  t.is(b.messages.length, want.length + 1, 'no state snapshot: the events are the state');
  t.is((await stats()).replaying, 0);
});

test('a replay keeps the subscription and the key\'s rights', async (t) => {
  const { url, client } = await startStreamController(t);
  const home = await TestStream.open(t, url, HOME, ALL);
  const since = (await home.next((m) => m.s === 'state')).seq;
  t.true(Number.isSafeInteger(since));
  home.ws.close();
  for (const i of ['sensor:other/t2', 'sensor:home/t1', 'lvar:home/l1']) await client.ok('update', { i, s: 1, v: '7', k: Keys.master });
  await client.ok('update', { i: 'sensor:home/t1', v: '7.5', k: Keys.master });
  await client.ok('log_error', { m: 'not for home', k: Keys.master });
  const again = await TestStream.open(t, url, HOME);
  again.send({ m: 'subscribe', events: [{ subject: 'state', types: ['sensor'], groups: ['#'] }], since });
  t.like(await again.next(), { s: 'subscribed', seq: since });
  // both changes of home/t1, in order (a state sent afresh would have only the last)
  const one = await again.next();
  t.is(one.d.length, 1);
  t.like(one.d[0], { oid: 'sensor:home/t1', value: '7' });
  const two = await again.next();
  t.like(two.d[0], { oid: 'sensor:home/t1', value: '7.5' });
  t.true(since < one.seq && one.seq < two.seq);
  // the live events after it: nothing replayed for other/t2, the lvar or the log
  await client.ok('update', { i: 'sensor:home/t1', v: '8', k: Keys.master });
  t.like((await again.next()).d[0], { oid: 'sensor:home/t1', value: '8' });
  t.deepEqual(again.messages, []);
});

test('before a client first subscribes, events are numbered but not kept (nothing to resume from yet); from then on they are', async (t) => {
  const { ctl, url, client } = await startStreamController(t, { server: QUIET });
  const log = ctl.get(Logger).module('early');
  for (let i = 0; i < 20; i++) log.info(`early${i}`);
  let st = await client.ok('stream_stats', { k: Keys.master });
  t.like(st, { ring_events: 0, ring_bytes: 0 }, JSON.stringify(st));
  const a = await TestStream.open(t, url, Keys.master, ALL);
  const state = await a.next((m) => m.s === 'state');
  log.info('kept');
  const kept = await logged(a, 'kept');
  // the numbers went on meanwhile: the twenty early events and the creates before them were numbered
  t.true(kept.seq > state.seq && state.seq >= 20, `state at ${state.seq}, then ${kept.seq}`);
  st = await client.ok('stream_stats', { k: Keys.master });
  t.true(st.ring_events >= 1 && st.ring_bytes > 0, JSON.stringify(st));
  // a since from before the first subscribe is a gap, not a replay of what was never kept
  const b = await TestStream.open(t, url, Keys.master);
  b.send({ m: 'subscribe', events: ALL, since: state.seq - 5 });
  t.like(await b.next(), { s: 'subscribed' });
  t.like(await b.next(), { s: 'gap', since: state.seq - 5 });
});

test('the ring at its event bound: a since older than it gets a gap and the state; one at its edge gets every kept event', async (t) => {
  const { ctl, url } = await startStreamController(t, { webapi: { ws_replay_events: 10 }, server: QUIET });
  const log = ctl.get(Logger).module('flood');
  const a = await TestStream.open(t, url, Keys.master, ALL);
  log.info('mark');
  const since = (await logged(a, 'mark')).seq;
  for (let i = 0; i < 25; i++) log.info(`e${i}`);
  const b = await TestStream.open(t, url, Keys.master);
  b.send({ m: 'subscribe', events: ALL, since });
  t.like(await b.next(), { s: 'subscribed' });
  const gap = await b.next();
  t.like(gap, { s: 'gap', since, first: since + 16, seq: since + 25 }, 'the 10 newest are kept: 16 … 25 after the mark');
  t.regex(gap.message, /no longer kept/);
  const state = await b.next();
  t.like(state, { s: 'state', seq: since + 25 });
  t.is(state.d.length, 3);
  // from the ring's edge: all ten kept, nothing else
  b.send({ m: 'subscribe', events: ALL, since: gap.first - 1 });
  t.like(await b.next(), { s: 'subscribed', seq: gap.first - 1 });
  await until('ten events', () => b.messages.length >= 10);
  t.deepEqual(b.messages.map((m) => m.seq), Array.from({ length: 10 }, (_, i) => gap.first + i));
  t.deepEqual(b.messages.map((m) => m.d[0].msg), Array.from({ length: 10 }, (_, i) => `e${i + 15}`));
  // one before the edge: a gap again
  b.messages.length = 0;
  b.send({ m: 'subscribe', events: ALL, since: gap.first - 2 });
  t.like(await b.next(), { s: 'subscribed' });
  t.like(await b.next(), { s: 'gap', since: gap.first - 2 });
});

test('the ring at its byte bound: the oldest go first, an event larger than the bound is not kept at all', async (t) => {
  const bytes = 4096;
  const { ctl, url, client } = await startStreamController(t, { webapi: { ws_replay_bytes: bytes }, server: QUIET });
  const log = ctl.get(Logger).module('flood');
  const a = await TestStream.open(t, url, Keys.master, LOG);
  log.info('mark');
  const since = (await logged(a, 'mark')).seq;
  for (let i = 0; i < 40; i++) log.info(`e${i} ${'b'.repeat(150)}`);
  const b = await TestStream.open(t, url, Keys.master);
  b.send({ m: 'subscribe', events: LOG, since });
  t.like(await b.next(), { s: 'subscribed' });
  const gap = await b.next();
  t.like(gap, { s: 'gap', since, seq: since + 40 });
  b.send({ m: 'subscribe', events: LOG, since: gap.first - 1 });
  await b.next((m) => m.s === 'subscribed');
  await until('the kept events', () => b.messages.some((m) => m.seq === since + 40));
  const kept = b.messages.map((m) => JSON.stringify(m).length + 48);
  const total = kept.reduce((x, y) => x + y, 0);
  t.true(total <= bytes, `${total} bytes kept`);
  t.true(total + kept[0] > bytes, 'one more would pass the bound');
  t.deepEqual(b.messages.map((m) => m.seq), Array.from({ length: kept.length }, (_, i) => gap.first + i));
  const stats = await client.ok('stream_stats', { k: Keys.master });
  t.true(stats.ring_bytes <= bytes && stats.ring_dropped > 0, JSON.stringify(stats));

  // larger than the whole bound: not kept, so a since before it gets a gap
  b.messages.length = 0;
  log.info('big ' + 'B'.repeat(bytes));
  const big = await logged(a, 'big ' + 'B'.repeat(bytes));
  b.send({ m: 'subscribe', events: LOG, since: big.seq - 1 });
  await b.next((m) => m.s === 'subscribed');
  t.like(await b.next((m) => m.s !== 'log'), { s: 'gap', since: big.seq - 1, first: big.seq + 1 });
});

test('bad since values are refused in words (11); the connection and its subscription stay', async (t) => {
  const { url, client } = await startStreamController(t);
  const s = await TestStream.open(t, url, Keys.master, LOG);
  await client.ok('log_warning', { m: 'where', k: Keys.master });
  const where = (await logged(s, 'where')).seq;
  const bad: [unknown, RegExp][] = [
    [-1, /since must be a whole number from 0 to 9007199254740991 .*not -1$/],
    [1.5, /not 1\.5$/],
    ['5', /not "5"$/],
    [1e20, /not 100000000000000000000$/],
    [2 ** 53, /not 9007199254740992$/],
    [true, /not true$/],
    [{ n: 1 }, /not \{"n":1\}$/],
    [[1], /not \[1\]$/],
    [where + 1000, new RegExp(`^since ${where + 1000} is ahead of this stream: its last seq is \\d+$`)],
  ];
  for (const [since, message] of bad) {
    s.send({ m: 'subscribe', events: [{ subject: 'state', types: ['#'], groups: ['#'] }], since });
    const e = await s.next();
    t.like(e, { s: 'error', code: 11 }, JSON.stringify(since));
    t.regex(e.message, message);
  }
  // still the log subscription, still connected, the controller fine
  await client.ok('log_warning', { m: 'still here', k: Keys.master });
  t.true((await logged(s, 'still here')).seq > where);
  t.deepEqual(s.messages.filter((m) => m.s !== 'log'), []);
  // null is no since: a fresh subscribe; 0 (never a number of any run) is a gap
  s.send({ m: 'subscribe', events: LOG, since: null });
  t.like(await s.next(), { s: 'subscribed' });
  s.send({ m: 'subscribe', events: LOG, since: 0 });
  t.like(await s.next(), { s: 'subscribed' });
  t.like(await s.next((m) => m.s !== 'log'), { s: 'gap', since: 0 });
  t.like(await client.ok('test', { k: Keys.master }), { ok: true });
});
